package host_test

import (
	"testing"

	"github.com/habench/habench/host"
)

// TestSSHMessageLine: a ConnError's message is ssh's first line of words, not the '@'
// rule of its host key banner.
func TestSSHMessageLine(t *testing.T) {
	banner := "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nIT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n"
	for in, want := range map[string]string{
		banner: "WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!",
		"ssh: connect to host 198.18.1.99 port 22: No route to host\r\n": "ssh: connect to host 198.18.1.99 port 22: No route to host",
		"\n  \n": "ssh exited 255 without a message",
	} {
		if got := host.FirstLineForTest(in); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}
