package experiment

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/habench/habench/report"
)

// goFormatting matches what Go's fmt prints for values a reader should never see: a map,
// a pointer to a struct, an empty slice, a bad verb, a nil.
var goFormatting = regexp.MustCompile(`map\[|&\{|\[\]|%!|<nil>`)

// TestSweepReportsNoGoFormatting: the files a sweep writes for readers (comparison.md,
// sweep.md, report.md) and the console comparison hold no Go formatting of maps,
// structs, slices or bad verbs.
func TestSweepReportsNoGoFormatting(t *testing.T) {
	sw, rows := writeAgreeSweep(t)
	outs := map[string]string{}
	for _, name := range []string{"comparison.md", "sweep.md", "report.md"} {
		b, err := os.ReadFile(filepath.Join(sw.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		outs[name] = string(b)
	}
	var con bytes.Buffer
	report.PrintComparison(&con, rows)
	outs["console"] = con.String()
	for name, out := range outs {
		for _, l := range strings.Split(out, "\n") {
			if loc := goFormatting.FindStringIndex(l); loc != nil {
				t.Errorf("%s: Go formatting: %s", name, l[max(0, loc[0]-60):min(len(l), loc[1]+60)])
			}
		}
	}
	if !strings.Contains(outs["report.md"], "- axes: links=none, repeat=1, threads=1, topology=swsingle") {
		t.Error("report.md lacks a cell's axes as name=value")
	}
}
