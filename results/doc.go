// Package results is the schema of a habench results directory: the Go types of its JSON
// files, declared once and used by the writer (package experiment) and the readers
// (package report, habench compare). summary.json is Summary (SummaryFile); its sections
// are NodeLag (nodes), HostSummary (hosts), Convergence, FaultSummary (faults) and the
// others below; manifest.json's hosts and drop_caches are HostInfo and CacheDrop
// (ManifestFile; the rest of the manifest is still declared by its writer, experiment,
// and read as a partial view by report). Field names and omitempty are the file format: a change here changes
// what every reader of older results sees (TestSummarySchemaUnchanged guards them).
// Units are in the field names (_s seconds, _ms milliseconds, _ps per second, _trx
// transactions); docs/results.md describes each file.
package results
