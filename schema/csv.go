package schema

// Names of a run's CSV files in its results directory.
const (
	IntervalsFile = "intervals.csv"
	SamplesFile   = "samples.csv"
)

// IntervalColumns is the header of intervals.csv: one row per report interval. Rates are
// per second, latencies in milliseconds, counts within the interval.
var IntervalColumns = []string{"elapsed_s", "threads", "tps", "qps", "reads_ps", "writes_ps", "others_ps",
	"lat_avg_ms", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms", "err_ps", "reconn_ps",
	"transactions", "reads", "writes", "others", "errors", "reconnects",
	"queue_length", "concurrency", "rate_arrivals", "rate_backlog_age_s", "svc_avg_ms", "svc_p95_ms", "svc_p99_ms"}

// SampleColumns is the header of samples.csv, long form: one row per node, metric and tick.
var SampleColumns = []string{"elapsed_s", "node", "metric", "value"}
