package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testdata/sweep10 is a real `habench run` of a sweep: five MariaDB 10.11 topologies
// (single, async and semi-sync with 2 nodes, two singles with other buffer pools) x the
// knob axis durability (sync_binlog/innodb_flush_log_at_trx_commit 1/1 and 0/2), 2
// threads, 4 s per cell: ten cells. Without variables.json, the runs' report.md and the
// sweep's rendered reports; paths rewritten to relative ones.
const sweep10 = "testdata/sweep10"

// goFormatting matches what Go's fmt prints for values a reader should never see: a map
// ("map[k:v]"), a pointer to a struct ("&{...}"), an empty slice ("[]"), a bad verb
// ("%!d(string=x)"), a nil ("<nil>").
var goFormatting = regexp.MustCompile(`map\[|&\{|\[\]|%!|<nil>`)

// rawGoFormatting lists the lines of out that contain Go formatting, with their number.
func rawGoFormatting(out string) []string {
	var bad []string
	for _, l := range strings.Split(out, "\n") {
		if goFormatting.MatchString(l) {
			if len(l) > 200 {
				loc := goFormatting.FindStringIndex(l)
				l = l[max(0, loc[0]-80):min(len(l), loc[1]+80)]
			}
			bad = append(bad, strings.TrimSpace(l))
		}
	}
	return bad
}

func TestHumanValue(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{map[string]any{"topology": "qsingle", "knob.durability": "1/1"}, "knob.durability=1/1, topology=qsingle"},
		{map[string]any{"a": map[string]any{"x": 1.0, "y": "z"}, "b": []any{}}, "a=(x=1, y=z), b=none"},
		{[]any{"n1", "n2", 3.0}, "n1, n2, 3"},
		{134217728.0, "134217728"},
		{0.25, "0.25"},
		{true, "true"},
		{nil, "n/a"},
		{"10s", "10s"},
		{map[string]any{}, "none"},
		{map[string]string{"b": "2", "a": "1"}, "a=1, b=2"},
	} {
		if got := humanValue(c.in); got != c.want {
			t.Errorf("humanValue(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestNoRawGoFormatting renders the reports of the testdata (a scenario of three runs,
// one of those runs alone, a ten-cell sweep) and fails on anything Go's fmt prints for a
// map, struct, slice, nil or a bad verb in what a reader sees: report.md and report.html.
func TestNoRawGoFormatting(t *testing.T) {
	for _, src := range []string{quick, runDir(t, "qsemi"), sweep10} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			d := copyTree(t, src)
			res, err := Load(d)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Render(res, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The charts' SVG is generated markup, not text: its text elements are checked.
			html := svgDoc.ReplaceAllStringFunc(string(r.HTML), func(svg string) string {
				return strings.Join(svgText.FindAllString(svg, -1), "\n")
			})
			for name, out := range map[string]string{"report.md": string(r.Markdown), "report.html": html} {
				if bad := rawGoFormatting(out); len(bad) > 0 {
					t.Errorf("%s has Go formatting in %d lines, e.g.:\n%s", name, len(bad), strings.Join(bad[:min(5, len(bad))], "\n"))
				}
			}
			if res.Kind == KindSweep && !strings.Contains(string(r.Markdown), "extra.axes: knob.durability=1/1, topology=rpsingle") {
				t.Error("report.md lacks the cells' axes as name=value")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(sweep10, "report.md")); err == nil {
		t.Errorf("%s holds a rendered report.md: keep the testdata to what a run writes", sweep10)
	}
}

var (
	svgDoc  = regexp.MustCompile(`(?s)<svg.*?</svg>`)
	svgText = regexp.MustCompile(`(?s)<text[^>]*>.*?</text>`)
)
