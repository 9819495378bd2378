// Package schema is the schema of a habench results directory, declared once: the
// writer (package experiment) and the readers (package report, habench compare) use these
// types and names.
//
//   - summary.json (SummaryFile) is Summary; its sections are NodeLag (nodes),
//     HostSummary (hosts), Convergence, FaultSummary (faults) and the others here.
//   - manifest.json (ManifestFile) is Manifest; its sections are ManifestWorkload,
//     Binaries, NodeInfo, HostInfo (hosts), CacheDrop (drop_caches), Knobs (KnobValue per
//     node), LinkImpairment (links.impairment), LinkChange (link_changes) and RunFault
//     (faults: a FaultRecord with its time on samples.csv's clock). Its topology is a
//     topology.Spec.
//   - intervals.csv and samples.csv (IntervalsFile, SamplesFile) have the columns
//     IntervalColumns and SampleColumns; their rows are Interval and Sample (Record
//     writes one, ParseIntervals and ParseSamples read them back); samples.csv's metric
//     names are the sampler package's Metric... constants.
//   - sweep.json (SweepName) of a scenario run is SweepFile: its axes in expansion order
//     (SweepAxis), cell_policy (CellPolicy), invocations and one CellRecord per cell;
//     ReadSweep reads it (habench run --resume, sweep.md and comparison.md).
//   - comparison.json (ComparisonName) is a JSON array of ComparisonRow.
//
// Field names and omitempty are the file format: a change here changes what every reader
// of older results sees (TestSummarySchemaUnchanged, TestManifestHostsSchemaUnchanged and
// TestSweepSchemaUnchanged guard them). Units are in the field names (_s seconds, _ms milliseconds, _ps per
// second, _trx transactions); docs/results.md describes each file.
package schema
