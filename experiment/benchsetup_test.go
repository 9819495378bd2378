package experiment_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/workload"
)

// preparedBench prepares workload name with o on c's writer and returns a Bench of it on
// nodes of c, writing its results in a temporary directory and its output to the returned
// builder, with an Injector on s; the caller adds faults, knobs and the rest. Any error
// fails the test.
func preparedBench(ctx context.Context, t *testing.T, s *cluster.Store, c *cluster.Cluster, name string, o workload.Options, nodes ...string) (*experiment.Bench, *strings.Builder) {
	t.Helper()
	wl, err := workload.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := wl.Prepare(ctx, target(c), o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	tg, err := experiment.ClusterTarget(c, "sbtest", nodes)
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	return &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), Stdout: &stdout,
		Injector: &experiment.Injector{Store: s}}, &stdout
}
