package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// The comparison of a scenario run (comparison.md, the table `habench run` prints): its
// rows are comparison.json's (schema.ComparisonRow), grouped by point.

// point is one point of the comparison: a cell and its repeats' rows.
type point struct {
	c    *stats.Cell
	rows []schema.ComparisonRow
}

// points groups rows by their point (ComparisonRow.Stats), in the rows' order; a row without
// Stats is a point of its own (its own numbers, no percentages).
func points(rows []schema.ComparisonRow) []point {
	var out []point
	idx := map[*stats.Cell]int{}
	for _, r := range rows {
		c := r.Stats
		if c == nil {
			var s schema.Summary
			if r.Summary != nil {
				s = *r.Summary
			}
			c = &stats.Cell{Topology: r.Topology, TPS: stats.Of([]float64{s.TPS}), QPS: stats.Of([]float64{s.QPS}),
				AvgMs: stats.Of([]float64{s.LatencyMs["avg"]}), P95Ms: stats.Of([]float64{s.LatencyMs["p95"]}), P99Ms: stats.Of([]float64{s.LatencyMs["p99"]})}
		} else if i, ok := idx[c]; ok {
			out[i].rows = append(out[i].rows, r)
			continue
		}
		idx[c] = len(out)
		out = append(out, point{c: c, rows: []schema.ComparisonRow{r}})
	}
	return out
}

// name is the point's topology with what qualifies it in the table itself (incomplete
// runs); the longer notes (reused, same path) are footnotes (see footnotes).
func (pt point) name() string {
	name := pt.rows[0].Topology
	failed := 0
	for _, x := range pt.rows {
		if x.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		name += fmt.Sprintf(" (%d of %d runs incomplete, left out)", failed, len(pt.rows))
	}
	return name
}

// footnotes collects the notes on a table's points: a marker per kind of note ("a",
// "b", ...) after the topology, and the notes under the table, each once.
type footnotes struct {
	marks []string          // in order of first use
	texts map[string]string // marker -> text
	by    map[string]string // note kind -> marker
	names map[string][]string
}

// mark returns the marker of the note of kind (text is the note's lead, names the
// point's topology and its detail, e.g. "s1async +0.015 ms").
func (f *footnotes) mark(kind, text, detail string) string {
	if f.by == nil {
		f.by, f.texts, f.names = map[string]string{}, map[string]string{}, map[string][]string{}
	}
	m, ok := f.by[kind]
	if !ok {
		m = string(rune('a' + len(f.marks)))
		f.by[kind], f.texts[m] = m, text
		f.marks = append(f.marks, m)
	}
	if detail != "" && !slices.Contains(f.names[m], detail) {
		f.names[m] = append(f.names[m], detail)
	}
	return m
}

// of is the point's name with its markers: "s1async (a)".
func (f *footnotes) of(pt point) string {
	r := pt.rows[0]
	var ms []string
	switch {
	case r.ReusedFrom != "":
		ms = append(ms, f.mark("reused:"+r.ReusedFrom, "1 node, no links: the runs of "+r.ReusedFrom+", not run again", ""))
	case strings.Contains(r.Note, "1 node, no links"):
		ms = append(ms, f.mark("1node", "1 node, no links", ""))
	}
	if r.LinksControl != "" {
		detail := r.Topology
		if c := cmpLinkCost(pt.rows); c != "" {
			detail += " " + c
		}
		ms = append(ms, f.mark("control:"+r.LinksControl, r.LinksControl+"; the link's own cost (the round trip it added to the plain bridge)", detail))
	}
	name := pt.name()
	if len(ms) > 0 {
		name += " (" + strings.Join(ms, ",") + ")"
	}
	return name
}

// lines are the footnotes, one per marker: "(a) same path: ...: s1async +0.015 ms, ...".
func (f *footnotes) lines() []string {
	var out []string
	for _, m := range f.marks {
		l := "(" + m + ") " + f.texts[m]
		if ns := f.names[m]; len(ns) > 0 {
			l += ": " + strings.Join(ns, ", ")
		}
		out = append(out, l+".")
	}
	return out
}

// cmpControlNote is "same path: the userspace link at zero delay, its cost +0.085 ms round
// trip" (the median over the rows' runs of the round trip the link added).
func cmpControlNote(rows []schema.ComparisonRow) string {
	s := rows[0].LinksControl
	if c := cmpLinkCost(rows); c != "" {
		s += ", its cost " + c + " round trip"
	}
	return s
}

// cmpLinkCost is schema.Median over the rows' runs of the round trip the link added
// (their link_added_rtt_ms: schema.LinkCostMs, report.md's number), "+0.085 ms"; ""
// without one.
func cmpLinkCost(rows []schema.ComparisonRow) string {
	var added []float64
	for _, r := range rows {
		if r.LinkAddedMs != nil {
			added = append(added, *r.LinkAddedMs)
		}
	}
	if len(added) == 0 {
		return ""
	}
	return fmtLinkCost(schema.Median(added))
}

// cpuBound says a run of the point had its busiest host CPU-saturated.
func (pt point) cpuBound() bool {
	for _, r := range pt.rows {
		if r.Summary != nil {
			if h := r.Summary.BusiestHost(); h != nil && h.CPUSaturated {
				return true
			}
		}
	}
	return false
}

// probed says a run of the point had a probe writer.
func (pt point) probed() bool {
	for _, r := range pt.rows {
		if r.Summary != nil && r.Summary.Probe != nil {
			return true
		}
	}
	return false
}

// lostAcked is "550 of 1424": the acknowledged commits the probe writer lost, summed
// over the point's runs; "n/a" without a probe, "not checked" when no check was made.
func (pt point) lostAcked() string {
	var lost, acked int64
	n, failed := 0, 0
	for _, r := range pt.rows {
		if r.Summary == nil || r.Summary.Probe == nil {
			continue
		}
		p := r.Summary.Probe
		if p.Error != "" {
			failed++
			continue
		}
		n++
		lost, acked = lost+p.LostAcknowledged, acked+p.Acknowledged
	}
	switch {
	case n == 0 && failed > 0:
		return "not checked"
	case n == 0:
		return "n/a"
	}
	return fmt.Sprintf("%d of %d", lost, acked)
}

// checked says a run of the point had a checker workload.
func (pt point) checked() bool {
	return slices.ContainsFunc(pt.rows, func(r schema.ComparisonRow) bool { return r.Summary != nil && r.Summary.Checks != nil })
}

// anomalies is the point's checker verdict over its runs (AnomaliesCell): the anomalies
// found, by type, summed over the runs; "not checked: ..." when no run could be checked
// (with how many of the runs could not, "1 of 3 runs not checked", after the others'
// figures); "n/a" without a checker.
func (pt point) anomalies() string {
	var n, checked, failed int
	var errText string
	types := map[string]int{}
	for _, r := range pt.rows {
		if r.Summary == nil || r.Summary.Checks == nil {
			continue
		}
		c := r.Summary.Checks
		if c.Error != "" {
			failed, errText = failed+1, c.Error
			continue
		}
		checked++
		n += c.AnomalyCount
		for t, k := range c.AnomalyTypes {
			types[t] += k
		}
	}
	switch {
	case checked == 0 && failed > 0:
		return AnomaliesCell(nil, nil, errText)
	case checked == 0:
		return "n/a"
	}
	out := AnomaliesCell(&n, types, "")
	if failed > 0 {
		out += fmt.Sprintf(" (%d of %d runs not checked)", failed, checked+failed)
	}
	return out
}

// anyProbed says a point of pts had a probe writer (the table gets the lost column).
func anyProbed(pts []point) bool {
	return slices.ContainsFunc(pts, point.probed)
}

// caveat is Caveat over the scenario's points: it marks ratios that compare
// CPU-bound cells or have no confidence interval, for the note under the table.
type caveat struct{ Caveat }

// mark is text with " ⚠" when the change c (of pt against ref, which may be nil)
// compares CPU-bound cells or has no confidence interval; text as it is for the
// reference itself and "n/a".
func (cv *caveat) mark(text string, c *stats.Change, pt point, ref *point) string {
	if text == "ref" || text == "n/a" || !cv.Applies(c, pt.cpuBound() || (ref != nil && ref.cpuBound())) {
		return text
	}
	return text + " " + Warn
}

// basePoint is the baseline topology's point among pts (nil without one).
func basePoint(pts []point, group string) *point {
	for i := range pts {
		if pts[i].c.IsBase && pts[i].rows[0].Group == group {
			return &pts[i]
		}
	}
	return nil
}

// alongRef is the point pt is compared with along axis: the same topology and other
// axes, the axis at its reference value (nil when not among pts).
func alongRef(pts []point, pt point, axis string) *point {
	a := pt.c.AlongAxis(axis)
	if a == nil {
		return nil
	}
	for i := range pts {
		q := pts[i].c
		if q.Topology != pt.c.Topology || q.Axes[axis] != a.Reference {
			continue
		}
		same := true
		for k, v := range pt.c.Axes {
			if k != axis && q.Axes[k] != v {
				same = false
			}
		}
		if same {
			return &pts[i]
		}
	}
	return nil
}

// cmpFlavorNote is the footnote naming the points whose server flavor or version differs
// from the baseline's ("" when none does): their ratios compare servers too.
func cmpFlavorNote(pts []point) string {
	var base *schema.ComparisonRow
	for _, pt := range pts {
		if pt.c.IsBase {
			base = &pt.rows[0]
			break
		}
	}
	if base == nil || base.Flavor == "" {
		return ""
	}
	var other []string
	for _, pt := range pts {
		r := pt.rows[0]
		if r.Flavor == "" || (r.Flavor == base.Flavor && r.Version == base.Version) {
			continue
		}
		s := r.Topology + " (" + flavorName(r.Flavor, r.Version) + ")"
		if !slices.Contains(other, s) {
			other = append(other, s)
		}
	}
	if len(other) == 0 {
		return ""
	}
	return fmt.Sprintf("Other server than the baseline %s (%s): %s; their ratios vs base compare the servers as well as the topologies.",
		base.Topology, flavorName(base.Flavor, base.Version), strings.Join(other, ", "))
}

// hostCPU is the busiest host's CPU of the point's busiest run ("n/a" without host samples).
func (pt point) hostCPU() string {
	var best *schema.Summary
	bestBusy := -1.0
	for _, r := range pt.rows {
		if r.Summary == nil {
			continue
		}
		if h := r.Summary.BusiestHost(); h != nil && h.CPUBusyMean != nil && *h.CPUBusyMean > bestBusy {
			best, bestBusy = r.Summary, *h.CPUBusyMean
		}
	}
	if best == nil {
		return "n/a"
	}
	return busiestHostCell(best)
}

// maxLag is the largest lag of the point's rows and the rows' unknown lags (distinct,
// "; "-joined), as LagText shows them.
func (pt point) maxLag() (*float64, string) {
	var m *float64
	var unknown []string
	for _, r := range pt.rows {
		if r.MaxLagS != nil && (m == nil || *r.MaxLagS > *m) {
			m = r.MaxLagS
		}
		if r.LagUnknown != "" && !slices.Contains(unknown, r.LagUnknown) {
			unknown = append(unknown, r.LagUnknown)
		}
	}
	return m, strings.Join(unknown, "; ")
}

// maxLagText is the point's max lag cell.
func (pt point) maxLagText() string {
	m, unknown := pt.maxLag()
	return LagText(m, unknown, "%.3f")
}

func changeOfBase(c *stats.Change) string {
	if c == nil {
		return "n/a"
	}
	return c.OfBase()
}

// alongAxes are the axes the points have changes along (those with several values).
func alongAxes(pts []point) []string {
	for _, pt := range pts {
		if len(pt.c.Along) > 0 {
			var out []string
			for _, a := range pt.c.Along {
				out = append(out, a.Axis)
			}
			return out
		}
	}
	return nil
}

func alongText(c *stats.Cell, axis string) string {
	a := c.AlongAxis(axis)
	if a == nil || (!a.TPS.OK && a.TPS.Verdict == "") {
		return "n/a"
	}
	if a.TPS.Verdict == stats.Reference {
		return "ref"
	}
	return a.TPS.Signed()
}

// ciText is "1200.0-1260.1", or "n/a (1 run)".
func ciText(s stats.Sample) string {
	if !s.HasCI() {
		return fmt.Sprintf("n/a (%d run)", s.N)
	}
	return fmt.Sprintf("%.1f-%.1f", *s.CILo, *s.CIHi)
}

// StatsNote explains the comparison's figures: means over repeats, the CI, vs base (when
// rows are of more than one topology) and vs AXIS, the rule for "within noise", and when
// there is a single repeat per cell that there is no CI.
func StatsNote(rows []schema.ComparisonRow) string {
	maxN := 0
	for _, pt := range points(rows) {
		maxN = max(maxN, pt.c.TPS.N)
	}
	s := "TPS and latencies are the mean over a cell's repeats (warm-up excluded); 95% CI: Student t over the repeats."
	if rowTopologies(rows) > 1 {
		s += " vs base: the baseline topology's cell with the same axis values;"
	}
	s += " vs AXIS: the change from the axis' reference value (ref), the other axes the same." +
		" \"within noise\": the 95% CI of the difference of the two means (Welch) includes 0; without it the difference is outside the noise."
	if maxN < 2 {
		s += " One repeat per cell: no confidence intervals, so no difference can be told from noise (give the sweep repeats: 3)."
	}
	return s
}

// ComparisonTable renders rows as a Markdown table, one line per point (a cell and its
// repeats): TPS mean, min-max and 95% CI, latency means, % of the baseline, the change
// along each axis, the largest replica lag of the repeats, the acknowledged commits a
// probe writer lost (when a point had one), the checker's anomalies (when a row has
// checker results); ratios of CPU-bound cells or without a CI
// marked ⚠; notes on the points, the marks and other servers than the baseline's under
// the table. Rows of one topology have no baseline: no vs base columns.
func ComparisonTable(rows []schema.ComparisonRow) string {
	return comparisonTable(rows, rowTopologies(rows) > 1)
}

// rowTopologies is how many topologies rows are of.
func rowTopologies(rows []schema.ComparisonRow) int {
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Topology] = true
	}
	return len(seen)
}

// comparisonTable is ComparisonTable with its vs base columns only when compared (the
// sweep has more than one topology, whatever this group's rows are).
func comparisonTable(rows []schema.ComparisonRow, compared bool) string {
	var b strings.Builder
	pts := points(rows)
	along := alongAxes(pts)
	probe := anyProbed(pts)
	check := slices.ContainsFunc(pts, point.checked)
	vsSep := ""
	b.WriteString("| topology | kind | flavor | version | runs | TPS | TPS min-max | TPS 95% CI | QPS | avg ms | p95 ms | p99 ms |")
	if compared {
		b.WriteString(" TPS vs base | latency vs base | p95 vs base |")
		vsSep = "---|---|---|"
	}
	for _, a := range along {
		b.WriteString(" TPS vs " + a + " |")
	}
	b.WriteString(" max replica lag s |")
	if probe {
		b.WriteString(" lost acked commits |")
	}
	if check {
		b.WriteString(" anomalies |")
	}
	b.WriteString(" busiest host CPU mean / max |\n|---|---|---|---|---|---|---|---|---|---|---|---|" + vsSep + strings.Repeat("---|", len(along)))
	if probe {
		b.WriteString("---|")
	}
	if check {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	var fn footnotes
	var cv caveat
	for _, pt := range pts {
		r, c := pt.rows[0], pt.c
		base := basePoint(pts, r.Group)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.2f | %.1f-%.1f | %s | %.2f | %.2f | %.2f | %.2f |",
			fn.of(pt), r.Kind, r.Flavor, r.Version, c.TPS.N, c.TPS.Mean, c.TPS.Min, c.TPS.Max, ciText(c.TPS),
			c.QPS.Mean, c.AvgMs.Mean, c.P95Ms.Mean, c.P99Ms.Mean)
		if compared {
			fmt.Fprintf(&b, " %s | %s | %s |", cv.mark(changeOfBase(c.VsBase), c.VsBase, pt, base),
				cv.mark(changeOfBase(c.LatVsBase), c.LatVsBase, pt, base), cv.mark(changeOfBase(c.P95VsBase), c.P95VsBase, pt, base))
		}
		for _, a := range along {
			b.WriteString(" " + alongMarked(&cv, pts, pt, a) + " |")
		}
		fmt.Fprintf(&b, " %s |", pt.maxLagText())
		if probe {
			fmt.Fprintf(&b, " %s |", pt.lostAcked())
		}
		if check {
			fmt.Fprintf(&b, " %s |", pt.anomalies())
		}
		fmt.Fprintf(&b, " %s |\n", pt.hostCPU())
	}
	if ls := fn.lines(); len(ls) > 0 {
		b.WriteString("\n" + strings.Join(ls, "\n\n") + "\n")
	}
	var ran []schema.ComparisonRow
	for _, r := range rows {
		if r.ReusedFrom == "" && r.Summary != nil {
			ran = append(ran, r)
		}
	}
	if bound := cpuBoundRows(ran); bound != "" {
		fmt.Fprintf(&b, "\n**CPU-bound:** %s: the run's busiest host was CPU-saturated (busy >= %.0f%% in at least %.0f%% of the measured seconds), so these numbers measure the host's CPU as much as the topology.\n",
			bound, sampler.CPUSaturatedBusy*100, sampler.CPUSaturatedShare*100)
	}
	if n := cv.Note(); n != "" {
		b.WriteString("\n" + n + "\n")
	}
	if n := cmpFlavorNote(pts); n != "" {
		b.WriteString("\n" + n + "\n")
	}
	if check {
		b.WriteString("\nanomalies = what the checker workload's checks found in its history, by type, summed over the point's runs (summary.json checks; report.md's Anomalies section explains each).\n")
	}
	if probe {
		b.WriteString("\nlost acked commits = the probe writer's acknowledged commits missing on the writer after the run (summary.json probe), of those acknowledged.\n")
	}
	return b.String()
}

// alongMarked is the point's TPS change along axis, marked when it compares CPU-bound
// cells or has no CI.
func alongMarked(cv *caveat, pts []point, pt point, axis string) string {
	t := alongText(pt.c, axis)
	if a := pt.c.AlongAxis(axis); a != nil {
		return cv.mark(t, &a.TPS, pt, alongRef(pts, pt, axis))
	}
	return t
}

// PrintComparison writes the comparison as aligned text tables, one per sweep group
// (headed by its axis values), one line per point (a cell and its repeats), the notes
// on points and marks under them, then StatsNote. Kept to ~120 columns: ratios as
// "TPS/base" (only when the rows are of more than one topology: one topology has no
// baseline), and with one repeat per cell the runs, TPS min-max and CI columns (1, the
// TPS itself, n/a) left out.
func PrintComparison(w io.Writer, rows []schema.ComparisonRow) {
	t := newTextComparison(rows)
	for gi, g := range t.groups {
		if t.grouped {
			if gi > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, g+":")
		}
		tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, t.header())
		for _, pt := range t.pts {
			if pt.rows[0].Group == g {
				fmt.Fprintln(tw, t.line(pt, g))
			}
		}
		tw.Flush()
	}
	t.notes(w, rows)
}

// textComparison is PrintComparison's state: the points, which optional columns the
// table has (compared: the vs base ones, when the rows are of more than one topology),
// the sweep groups in order, and the footnotes and caveat marks collected while the
// lines are written.
type textComparison struct {
	pts                                      []point
	along, groups                            []string
	probe, check, repeats, grouped, compared bool
	fn                                       footnotes
	cv                                       caveat
}

func newTextComparison(rows []schema.ComparisonRow) *textComparison {
	pts := points(rows)
	t := &textComparison{pts: pts, along: alongAxes(pts), probe: anyProbed(pts), check: slices.ContainsFunc(pts, point.checked),
		compared: rowTopologies(rows) > 1}
	for _, pt := range pts {
		t.repeats = t.repeats || pt.c.TPS.N > 1
		if g := pt.rows[0].Group; !slices.Contains(t.groups, g) {
			t.groups = append(t.groups, g)
		}
	}
	t.grouped = len(t.groups) > 1 || (len(t.groups) == 1 && t.groups[0] != "")
	return t
}

// header is a table's header line, tab-separated.
func (t *textComparison) header() string {
	head := "topology\tkind\t"
	if t.repeats {
		head += "runs\tTPS\tTPS min-max\tTPS 95% CI\t"
	} else {
		head += "TPS\t"
	}
	head += "avg ms\tp95 ms\t"
	if t.compared {
		head += "TPS/base\tlat/base\tp95/base\t"
	}
	for _, a := range t.along {
		head += "TPS vs " + a + "\t"
	}
	head += "max lag s\t"
	if t.probe {
		head += "lost acked\t"
	}
	if t.check {
		head += "anomalies\t"
	}
	head += "busiest host CPU\t"
	if t.grouped {
		head = "cell\t" + head
	}
	return head
}

// line is pt's line in group g's table, tab-separated.
func (t *textComparison) line(pt point, g string) string {
	short := func(s string) string { return strings.TrimSuffix(s, " (reference)") }
	c, cv := pt.c, &t.cv
	base := basePoint(t.pts, g)
	line := fmt.Sprintf("%s\t%s\t", t.fn.of(pt), pt.rows[0].Kind)
	if t.repeats {
		line += fmt.Sprintf("%d\t%.2f\t%.1f-%.1f\t%s\t", c.TPS.N, c.TPS.Mean, c.TPS.Min, c.TPS.Max, ciText(c.TPS))
	} else {
		line += fmt.Sprintf("%.2f\t", c.TPS.Mean)
	}
	line += fmt.Sprintf("%.2f\t%.2f\t", c.AvgMs.Mean, c.P95Ms.Mean)
	if t.compared {
		line += fmt.Sprintf("%s\t%s\t%s\t", short(cv.mark(changeOfBase(c.VsBase), c.VsBase, pt, base)),
			short(cv.mark(changeOfBase(c.LatVsBase), c.LatVsBase, pt, base)), short(cv.mark(changeOfBase(c.P95VsBase), c.P95VsBase, pt, base)))
	}
	for _, a := range t.along {
		line += alongMarked(cv, t.pts, pt, a) + "\t"
	}
	line += pt.maxLagText() + "\t"
	if t.probe {
		line += pt.lostAcked() + "\t"
	}
	if t.check {
		line += pt.anomalies() + "\t"
	}
	line += pt.hostCPU() + "\t"
	if t.grouped {
		var idx []string
		for _, r := range pt.rows {
			if r.Cell > 0 {
				idx = append(idx, fmt.Sprint(r.Cell))
			}
		}
		if len(idx) == 0 {
			idx = []string{"-"}
		}
		line = strings.Join(idx, ",") + "\t" + line
	}
	return line
}

// notes writes what goes under the tables: the points' footnotes, the columns'
// meanings, the caveat and flavor notes, and StatsNote.
func (t *textComparison) notes(w io.Writer, rows []schema.ComparisonRow) {
	for _, l := range t.fn.lines() {
		fmt.Fprintln(w, l)
	}
	if t.compared {
		fmt.Fprintln(w, "TPS/base, lat/base, p95/base: TPS, average and p95 latency in % of the baseline's (100% = the same).")
	}
	if n := t.cv.Note(); n != "" {
		fmt.Fprintln(w, n)
	}
	if n := cmpFlavorNote(t.pts); n != "" {
		fmt.Fprintln(w, n)
	}
	if t.probe {
		fmt.Fprintln(w, "lost acked = the probe writer's acknowledged commits missing on the writer after the run, of those acknowledged.")
	}
	if t.check {
		fmt.Fprintln(w, "anomalies = what the checker workload's checks found in its history, by type, summed over the point's runs (summary.json checks).")
	}
	fmt.Fprintln(w, StatsNote(rows))
}

// cpuBoundRows names the rows whose busiest host was CPU-saturated ("" when none).
func cpuBoundRows(rows []schema.ComparisonRow) string {
	var names []string
	for _, r := range rows {
		if h := r.Summary.BusiestHost(); h != nil && h.CPUSaturated {
			name := r.Topology
			if r.Note != "" {
				name += " (" + r.Note + ")"
			}
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// busiestHostCell is the comparison tables' "busiest host CPU" cell: the host, its mean
// and largest busy fraction over the measured part, and "CPU-bound" when it was
// CPU-saturated ("n/a" without host samples).
func busiestHostCell(s *schema.Summary) string {
	h := s.BusiestHost()
	if h == nil {
		return "n/a"
	}
	c := fmt.Sprintf("%s %s / %s", h.Host, pct(h.CPUBusyMean), pct(h.CPUBusyMax))
	if h.CPUSaturated {
		c += " CPU-bound"
	}
	return c
}
