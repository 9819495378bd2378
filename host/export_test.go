package host

// Exposed to the package's external tests.
var (
	ReadRequestForTest    = readRequest
	ParseReadReplyForTest = parseReadReply
)

// MeasureClockForTest is measureClock (rounds with a fake clock and a fake host clock).
var MeasureClockForTest = measureClock

// ParseDateForTest is parseDate.
var ParseDateForTest = parseDate

// FirstLineForTest is firstLine (ssh's message for a ConnError).
var FirstLineForTest = firstLine
