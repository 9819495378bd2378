package host

import (
	"bytes"
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
	if stdin == nil {
		return s.command(ctx, nil, argv)
	}
	return s.command(ctx, bytes.NewReader(stdin), argv)
}

// ControlDirForTest is controlDir.
var ControlDirForTest = controlDir
