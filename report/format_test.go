package report

import (
	"fmt"
	"html"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
			for name, out := range map[string]string{"report.md": string(r.Markdown), "report.html": readerText(r.HTML)} {
				if bad := rawGoFormatting(out); len(bad) > 0 {
					t.Errorf("%s has Go formatting in %d lines, e.g.:\n%s", name, len(bad), strings.Join(bad[:min(5, len(bad))], "\n"))
				}
			}
			knownBadControl(t, r)
			if res.Kind == KindSweep && !strings.Contains(string(r.Markdown), "- axes: knob.durability=1/1, topology=rpsingle") {
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

// readerText is what a reader of report.html sees, as text to search: the charts' SVG is
// generated markup, so only its text elements are kept, and the entities are unescaped
// (html/template writes "<nil>" as "&lt;nil&gt;" and "&{" as "&amp;{").
func readerText(page []byte) string {
	s := svgDoc.ReplaceAllStringFunc(string(page), func(svg string) string {
		return strings.Join(svgText.FindAllString(svg, -1), "\n")
	})
	return html.UnescapeString(s)
}

// knownBadControl puts what Go's fmt prints for a nil, a pointer to a struct, a map and an
// empty slice into a copy of the rendered report.md and report.html (escaped, as
// html/template would write them, one in a chart's text) and requires the check to find
// each: a check that cannot fail proves nothing.
func knownBadControl(t *testing.T, r *Rendered) {
	t.Helper()
	type pt struct{ A, B int }
	var nilp *pt
	bad := []string{fmt.Sprint(nilp), fmt.Sprint(&pt{1, 2}), fmt.Sprint(map[string]int{"a": 1}), fmt.Sprint([]int{})}
	page := string(r.HTML)
	i := strings.Index(page, "</body>")
	svg := strings.Index(page, "</svg>")
	if i < 0 {
		t.Fatal("report.html has no </body>")
	}
	var cells strings.Builder
	for _, b := range bad {
		fmt.Fprintf(&cells, "<p>value: %s</p>\n", template.HTMLEscapeString(b))
	}
	page = page[:i] + cells.String() + page[i:]
	want := len(bad)
	if svg >= 0 {
		page = page[:svg] + "<text x=\"1\">" + template.HTMLEscapeString(fmt.Sprint(nilp)) + "</text>" + page[svg:]
		want++
	}
	if got := rawGoFormatting(readerText([]byte(page))); len(got) != want {
		t.Errorf("control: %d of %d planted Go formattings found in report.html: %q", len(got), want, got)
	}
	md := string(r.Markdown) + "\n| x | " + strings.Join(bad, " |\n| x | ") + " |\n"
	if got := rawGoFormatting(md); len(got) != len(bad) {
		t.Errorf("control: %d of %d planted Go formattings found in report.md: %q", len(got), len(bad), got)
	}
}

// TestSettingsTableReadable: the ten cells of sweep10 head the settings table by their
// cell labels with a key (the full names), the settings equal everywhere are listed with
// their values, long values may wrap; the three runs of quick keep their names.
func TestSettingsTableReadable(t *testing.T) {
	res, err := Load(copyTree(t, sweep10))
	if err != nil {
		t.Fatal(err)
	}
	st := settingsAcross(res.Runs, true)
	if want := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"}; !slices.Equal(st.Cols, want) {
		t.Errorf("columns %v, want %v", st.Cols, want)
	}
	if len(st.Keys) != 10 || st.Keys[4] != (colKey{Short: "c5", Topology: "rpsemi", Full: "rpsemi knob.durability=1/1"}) {
		t.Errorf("keys %+v", st.Keys)
	}
	if st.Same == 0 || len(st.Common) != st.Same || !slices.Contains(st.Common, fact{"binlog_format", "ROW"}) {
		t.Errorf("%d equal settings, common %v", st.Same, st.Common)
	}
	r, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, md := string(r.HTML), string(r.Markdown)
	for _, w := range []string{`<table class="vars keyed">`, `<th class="l" title="rpsemi knob.durability=1/1">c5<br><span class="sub">rpsemi</span></th>`,
		"<b>c10</b> rpsmall knob.durability=0/2.", "Settings equal in every run (" + strconv.Itoa(st.Same) + ")", "<code>binlog_format=ROW</code>",
		"STRICT_<wbr>TRANS_<wbr>TABLES,<wbr>NO_"} {
		if !strings.Contains(h, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	for _, w := range []string{"| variable | c1 | c2 | c3 |", "**c1** rpsingle knob.durability=1/1;", "Equal in every run: `auto_increment_increment=1`,"} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	q, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	if st := settingsAcross(q.Runs, true); st.Keys != nil || !slices.Equal(st.Cols, []string{"qsingle", "qasync", "qsemi"}) {
		t.Errorf("quick: columns %v, keys %v", st.Cols, st.Keys)
	}
	if got := wrapHTML("a,b_<c>"); got != "a,<wbr>b_<wbr>&lt;c&gt;" {
		t.Errorf("wrapHTML: %q", got)
	}
}
