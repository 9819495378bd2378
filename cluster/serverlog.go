package cluster

// A server's error log and output made into error messages: the option it refused (bad
// input), its [ERROR] lines. Shared by every provider that starts servers.

import (
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/habench/habench/topology"
)

var (
	unknownVarRE = regexp.MustCompile(`unknown (?:variable|option) '-*([^'=]+)(?:=([^']*))?'`)
	badValueRE   = regexp.MustCompile(`Error while setting value '([^']*)' to '([^']+)'`)
)

// optionError turns a server's refusal of a user option (found in its error log) into bad
// input: *topology.FieldError naming the option and the value. nil when the log has none.
// An unknown loose_ option is only a warning (the server starts without it), never the
// refusal.
func optionError(log string) *topology.FieldError {
	for _, m := range unknownVarRE.FindAllStringSubmatch(log, -1) {
		if name := strings.ReplaceAll(m[1], "-", "_"); !strings.HasPrefix(name, "loose_") {
			return &topology.FieldError{Field: "options", Value: name, Reason: "the server does not know this variable"}
		}
	}
	if m := badValueRE.FindStringSubmatch(log); m != nil {
		return &topology.FieldError{Field: "options." + strings.ReplaceAll(m[2], "-", "_"), Value: m[1], Reason: "the server refused this value"}
	}
	return nil
}

// errorLines returns the [ERROR] lines of a server error log joined by "; " (the last
// five), or its last three lines when it has none: one readable line for an error message.
func errorLines(log string) string {
	var errs []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "[ERROR]") {
			if i := strings.Index(l, "[ERROR]"); i >= 0 {
				l = l[i:]
			}
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return strings.ReplaceAll(tail(log, 3), "\n", "; ")
	}
	if len(errs) > 5 {
		errs = errs[len(errs)-5:]
	}
	return strings.Join(errs, "; ")
}

func readFile(p string) string { b, _ := os.ReadFile(p); return string(b) }

// readFrom returns file p from byte offset off on ("" when it cannot be read).
func readFrom(p string, off int64) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
