package host

import (
	"context"
	"os/exec"
)

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

// Command is SSH.command, for tests.
func (s *SSH) Command(ctx context.Context, stdin []byte, argv []string) (*exec.Cmd, error) {
	return s.command(ctx, stdin, argv)
}

// ControlDirForTest is controlDir.
var ControlDirForTest = controlDir
