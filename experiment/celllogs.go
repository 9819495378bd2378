package experiment

import (
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
)

// ErrorLogLines is how many of a failing node's last error log lines a failed cell keeps.
const ErrorLogLines = 300

// keepNodeLog keeps, for cell that failed with err naming one node of c (a
// *cluster.NodeError: a restart that did not come back, a node not ready in time), the last
// ErrorLogLines lines of that node's server error log in the sweep directory
// ("c003-g1-n3-error.log"), before the deployment is destroyed with it: rec.ErrorLog names
// the file, rec.Error says where it is, and the output too. Nothing for another error or a
// cluster habench did not deploy; a log that cannot be read is a warning of the cell; one
// that cannot be written fails the run (sw.saveErr, naming the file).
func (sw *sweepRun) keepNodeLog(c *cluster.Cluster, cell *scenario.Cell, rec *schema.CellRecord, err error) {
	var ne *cluster.NodeError
	if !errors.As(err, &ne) || !c.Deployed() {
		return
	}
	n := c.Member(ne.Node)
	if n == nil {
		return
	}
	text, rerr := c.ErrorLogTail(n, ErrorLogLines)
	if rerr != nil {
		rec.Warnings = append(rec.Warnings, "the error log of "+ne.Node+" could not be kept: "+rerr.Error())
		return
	}
	name := fmt.Sprintf("c%03d-%s-%s-error.log", cell.Index, cell.Topology, ne.Node)
	p := filepath.Join(sw.dir, name)
	if werr := os.WriteFile(p, []byte(text+"\n"), 0o644); werr != nil {
		if sw.saveErr == nil {
			sw.saveErr = fmt.Errorf("write %s: %w", p, werr)
		}
		return
	}
	rec.ErrorLog = name
	rec.Error += fmt.Sprintf(" (%s's error log, its last %d lines: %s)", ne.Node, ErrorLogLines, name)
	fmt.Fprintf(sw.out, "cell %d: %s's error log (its last %d lines) kept in %s\n", cell.Index, ne.Node, ErrorLogLines, p)
}
