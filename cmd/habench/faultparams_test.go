package main

import (
	"strings"
	"testing"
)

// TestFaultParamsBadInput: `habench fault`'s KEY=VALUE parameters are checked against the
// action's declaration before anything is loaded: one line, exit 2, naming the parameter.
func TestFaultParamsBadInput(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fault", "kill", "n1", "duration=2s", "--cluster", "f19-none"}, `duration "2s": kill takes no parameters`},
		{[]string{"fault", "pause", "n1", "duration=soon", "--cluster", "f19-none"}, `duration "soon": want a duration > 0`},
		{[]string{"fault", "pause", "n1", "2s", "--cluster", "f19-none"}, `parameter "2s": want KEY=VALUE`},
		{[]string{"fault", "pause"}, "want at least 2 argument(s)"},
	} {
		r := habench(t, state, c.args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("habench %v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
