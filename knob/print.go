package knob

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/habench/habench/schema"
)

// PrintValues writes node values as a table: NODE KNOB VARIABLE BEFORE EFFECTIVE (and
// RESTORED when restored) NOTE; then one WARNING line per value the server did not take
// as requested.
func PrintValues(w io.Writer, vals []schema.KnobValue, restored bool) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	hdr := "NODE\tKNOB\tVARIABLE\tBEFORE\tEFFECTIVE"
	if restored {
		hdr += "\tRESTORED"
	}
	fmt.Fprintln(tw, hdr+"\tNOTE")
	for _, v := range vals {
		line := fmt.Sprintf("%s\t%s=%s\t%s\t%s\t%s", v.Node, v.Knob, v.Requested, v.Variable, v.Before, v.Effective)
		if restored {
			r := "-"
			if v.Restored != nil {
				r = *v.Restored
			}
			line += "\t" + r
		}
		fmt.Fprintln(tw, line+"\t"+v.Note)
	}
	tw.Flush()
	for _, v := range vals {
		if !v.Matches && v.Effective != "" {
			fmt.Fprintf(w, "WARNING: knob %s=%s on %s: the server took %s\n", v.Knob, v.Requested, v.Node, v.Effective)
		}
	}
}

// PrintShow writes current values (Show) as NODE KNOB VARIABLE VALUE.
func PrintShow(w io.Writer, vals []schema.KnobValue) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKNOB\tVARIABLE\tVALUE")
	for _, v := range vals {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Node, v.Knob, v.Variable, v.Effective)
	}
	tw.Flush()
}
