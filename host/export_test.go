package host

// Exposed to the package's external tests.
var (
	ReadRequestForTest    = readRequest
	ParseReadReplyForTest = parseReadReply
)
