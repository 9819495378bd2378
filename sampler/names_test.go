package sampler

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMetricNamesAreConstants: outside this package, the production code names sampled
// metrics by their constants (MetricLag, ...), never by a string literal, so a renamed
// metric cannot leave a report, the Prometheus metrics or a summary reading the old name.
// Allowed: comments, JSON tags (`json:"sampler_errors"`) and the neutral replica-status
// column names ("io_running", "sql_running"), which are not metrics: the arguments of
// Capabilities.ReplicaStatusColumn and its table in topology/flavor.go.
func TestMetricNamesAreConstants(t *testing.T) {
	var names []string
	for _, m := range Metrics {
		if !strings.Contains(m.Name, "<") {
			names = append(names, regexp.QuoteMeta(m.Name))
		}
	}
	if len(names) < 40 {
		t.Fatalf("%d metric names in Metrics, want at least 40", len(names))
	}
	lit := regexp.MustCompile(`(ReplicaStatusColumn\(|[:\w])?"(` + strings.Join(names, "|") + `)"`)
	files, found := 0, 0
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "sampler" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if filepath.ToSlash(p) == "../topology/flavor.go" {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, m := range lit.FindAllStringSubmatch(line, -1) {
				if m[1] != "" {
					continue
				}
				found++
				t.Errorf("%s:%d: metric name %q as a string literal (use its sampler constant)", p, i+1, m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files, want the repository's (at least 100)", files)
	}
	t.Logf("%d Go files outside sampler/ scanned, %d literals", files, found)
}
