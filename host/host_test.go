package host

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestLocalRunAndExitError(t *testing.T) {
	ctx := context.Background()
	var h Host = Local{}
	out, err := h.Run(ctx, "sh", "-c", "echo hello; echo oops >&2")
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("Run: %q, %v", out, err)
	}
	_, err = h.Run(ctx, "sh", "-c", "echo denied >&2; exit 3")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "local") {
		t.Fatalf("want ExitError code 3 naming the host and stderr, got %v", err)
	}
	if _, err := h.Run(ctx, "/nonexistent/cmd"); err == nil || errors.As(err, &ee) {
		t.Fatalf("a command that cannot start: want a non-exit error, got %v", err)
	}
	b, err := h.ReadFile(ctx, "/proc/self/stat")
	if err != nil || len(b) == 0 {
		t.Fatalf("ReadFile: %v", err)
	}
}
