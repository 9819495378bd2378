// Package workload is habench's sysbench-compatible OLTP engine: the sbtest
// schema and data (prepare), the oltp_* event mixes and bulk_insert of sysbench
// 1.0.20 (run), cleanup, and sysbench's text report layout (header, interval lines,
// --histogram, final summary). Under --rate arrivals are open-loop (rate.go); live
// counters of a run in progress are read through Live (live.go).
//
// It knows nothing about topologies: a Target is a list of endpoints that
// workers connect to round-robin, exactly like sysbench's --mysql-host list.
//
// Statistics are kept per worker (no lock shared between workers in the hot
// path) and merged by one harvesting goroutine at report intervals and at the
// end. Latencies go into HdrHistograms in microseconds with 3 significant
// digits (so --histogram's resolution is 1 us where sysbench's is finer).
package workload

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Random number distributions accepted by Options.RandType (sysbench --rand-type).
const (
	RandUniform  = "uniform"
	RandGaussian = "gaussian"
	RandSpecial  = "special"
	RandPareto   = "pareto"
	RandZipfian  = "zipfian"
)

// Prepared statement modes accepted by Options.PSMode (sysbench --db-ps-mode).
const (
	// PSAuto uses server-side prepared statements (COM_STMT_PREPARE once per
	// statement, table and worker connection; COM_STMT_EXECUTE per query).
	PSAuto = "auto"
	// PSDisable uses the text protocol with client-side interpolation (COM_QUERY).
	PSDisable = "disable"
)

// DefaultIgnoreErrors are sysbench 1.0.20's default --mysql-ignore-errors:
// deadlock (1213), key file error (1020) and lock wait timeout (1205).
var DefaultIgnoreErrors = []uint16{1213, 1020, 1205}

// Options are the run and prepare parameters, named and defaulted like
// sysbench 1.0.20's options (except RandType, see DefaultOptions). The
// sysbench option name of each field is given in its comment.
type Options struct {
	// Tables is the number of sbtestN tables (--tables, default 1).
	Tables int
	// TableSize is the number of rows per table (--table-size, default 10000).
	TableSize int
	// Threads is the number of worker connections (--threads, default 1).
	// Prepare loads up to Threads tables in parallel.
	Threads int
	// Time limits the measured part of the run (--time, seconds, default 10 s);
	// 0 means no time limit. Events in flight at the limit are completed.
	Time time.Duration
	// Events limits the total number of measured events (transactions) (--events,
	// default 0 = unlimited).
	Events int64
	// ReportInterval is the period of interval reports (--report-interval,
	// seconds, default 0 = off).
	ReportInterval time.Duration
	// RandType is the distribution of row ids and k values (--rand-type):
	// uniform (default here, as in sysbench 1.1), special (sysbench 1.0.20's
	// default), gaussian, pareto or zipfian.
	RandType string
	// RandSeed seeds the generators (--rand-seed, default 0 = current time).
	RandSeed int64
	// RandSpecIter is the number of iterations of the gaussian and special
	// distributions (--rand-spec-iter, default 12).
	RandSpecIter int
	// RandSpecPct is the percentage of the range that receives the special
	// values (--rand-spec-pct, default 1).
	RandSpecPct int
	// RandSpecRes is the percentage of values that are special
	// (--rand-spec-res, default 75).
	RandSpecRes int
	// RandParetoH is the Pareto shape (--rand-pareto-h, default 0.2, in (0,1)).
	RandParetoH float64
	// RandZipfianExp is the Zipfian exponent (--rand-zipfian-exp, default 0.8, >= 0).
	RandZipfianExp float64
	// PSMode is PSAuto (server-side prepared statements, default) or PSDisable
	// (text protocol) (--db-ps-mode).
	PSMode string
	// Percentile is the latency percentile reported in interval lines and the
	// summary (--percentile, default 95, in [0,100]; 0 disables it).
	Percentile float64
	// ExtraPercentiles are further latency percentiles, each in (0,100], that the
	// summary prints after Percentile (habench's own: --percentile 95,99,99.9 sets
	// Percentile 95 and ExtraPercentiles [99 99.9]; sysbench takes one value). Interval
	// lines keep Percentile only.
	ExtraPercentiles []float64
	// Histogram prints the latency histogram in sysbench's layout before the summary
	// (--histogram, sysbench's option; default off; refused with Percentile 0 as
	// sysbench refuses it).
	Histogram bool
	// RangeSize is the number of ids in range SELECTs (--range-size, default 100).
	RangeSize int
	// PointSelects is the number of point SELECTs per transaction
	// (--point-selects, default 10; oltp_point_select always runs 1).
	PointSelects int
	// SimpleRanges is the number of simple range SELECTs per transaction (--simple-ranges, 1).
	SimpleRanges int
	// SumRanges is the number of SELECT SUM(k) ranges per transaction (--sum-ranges, 1).
	SumRanges int
	// OrderRanges is the number of ORDER BY range SELECTs per transaction (--order-ranges, 1).
	OrderRanges int
	// DistinctRanges is the number of DISTINCT range SELECTs per transaction (--distinct-ranges, 1).
	DistinctRanges int
	// IndexUpdates is the number of UPDATE ... SET k=k+1 per transaction (--index-updates, 1).
	IndexUpdates int
	// NonIndexUpdates is the number of UPDATE ... SET c=? per transaction (--non-index-updates, 1).
	NonIndexUpdates int
	// DeleteInserts is the number of DELETE + INSERT pairs per transaction (--delete-inserts, 1).
	DeleteInserts int
	// RangeSelects enables the four range SELECT groups (--range-selects, default on).
	RangeSelects bool
	// SkipTrx runs without BEGIN/COMMIT, in autocommit mode (--skip-trx, default off).
	SkipTrx bool
	// IgnoreErrors are the MySQL error codes after which the transaction is
	// rolled back, counted as an ignored error and retried
	// (--mysql-ignore-errors, default 1213,1020,1205).
	IgnoreErrors []uint16
	// IgnoreAllErrors ignores every server error (--mysql-ignore-errors=all).
	IgnoreAllErrors bool
	// Rate is the target number of transactions per second, generated as a
	// Poisson arrival process into a queue that workers take events from
	// (--rate, default 0 = unlimited).
	Rate int
	// WriterHang (habench's own, --writer-hang, seconds; 0 = DefaultWriterHang, 2 s):
	// with Target.Follow, a worker whose event has been in progress this long while
	// Follow names another writer gives the event up (an unknown outcome, Result.Unknown)
	// and moves to that writer. Without Follow it does nothing.
	WriterHang time.Duration
	// Warmup runs events for this long before the measured run; they are
	// excluded from every statistic (--warmup-time, seconds, default 0).
	// The wall time of a run is Warmup + Time.
	Warmup time.Duration
	// CreateSecondary creates index k_N on sbtestN(k) after the load
	// (--create-secondary, default on).
	CreateSecondary bool
	// AutoInc declares id AUTO_INCREMENT (--auto-inc, default on). It only
	// changes the schema: Prepare always inserts explicit ids 1..TableSize, so
	// a Galera auto_increment_increment can never make the id space sparse.
	AutoInc bool
	// MysqlEngine is the storage engine of the tables (--mysql-storage-engine,
	// default innodb).
	MysqlEngine string
}

// DefaultOptions returns sysbench 1.0.20's defaults, except RandType which is
// "uniform" (sysbench 1.1's default; 1.0.20 defaults to "special").
func DefaultOptions() Options {
	return Options{
		Tables:          1,
		TableSize:       10000,
		Threads:         1,
		Time:            10 * time.Second,
		RandType:        RandUniform,
		RandSpecIter:    12,
		RandSpecPct:     1,
		RandSpecRes:     75,
		RandParetoH:     0.2,
		RandZipfianExp:  0.8,
		PSMode:          PSAuto,
		Percentile:      95,
		RangeSize:       100,
		PointSelects:    10,
		SimpleRanges:    1,
		SumRanges:       1,
		OrderRanges:     1,
		DistinctRanges:  1,
		IndexUpdates:    1,
		NonIndexUpdates: 1,
		DeleteInserts:   1,
		RangeSelects:    true,
		IgnoreErrors:    slices.Clone(DefaultIgnoreErrors),
		CreateSecondary: true,
		AutoInc:         true,
		MysqlEngine:     "innodb",
		WriterHang:      DefaultWriterHang,
	}
}

// Upper limits of Options checked by Validate.
const (
	// MaxThreads is the largest --threads: one connection per worker, and
	// MySQL's and MariaDB's max_connections cannot exceed 100000.
	MaxThreads = 100000
	// MaxTables is the largest --tables (every worker holds its statements for
	// every table).
	MaxTables = 100000
	// MaxTableSize is the largest --table-size: sbtest.id is a signed 32-bit INTEGER.
	MaxTableSize = math.MaxInt32
)

var engineRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// RandTypes lists the accepted Options.RandType values.
func RandTypes() []string {
	return []string{RandUniform, RandGaussian, RandSpecial, RandPareto, RandZipfian}
}

// Validate checks every option and returns nil or one error that names each
// offending sysbench option and its value, e.g.
// `--threads "-1": want an integer >= 1` (several problems are joined, one per line).
func (o Options) Validate() error {
	var errs []error
	bad := func(flag, val, want string) {
		errs = append(errs, fmt.Errorf("--%s %q: want %s", flag, val, want))
	}
	itoa := strconv.Itoa
	minInt := func(flag string, v, min int) {
		if v < min {
			bad(flag, itoa(v), fmt.Sprintf("an integer >= %d", min))
		}
	}
	rangeInt := func(flag string, v, min, max int, why string) {
		if v < min || v > max {
			bad(flag, itoa(v), fmt.Sprintf("an integer in [%d,%d] (%s)", min, max, why))
		}
	}
	rangeInt("tables", o.Tables, 1, MaxTables, "each worker keeps its statements for every table")
	rangeInt("table-size", o.TableSize, 1, MaxTableSize, "sbtest.id is a signed INTEGER")
	rangeInt("threads", o.Threads, 1, MaxThreads, "one connection per thread; MySQL's max_connections stops at 100000")
	if o.Time < 0 {
		bad("time", secs(o.Time), "a number of seconds >= 0 (0 = no limit)")
	}
	if o.Events < 0 {
		bad("events", strconv.FormatInt(o.Events, 10), "an integer >= 0 (0 = no limit)")
	}
	if o.ReportInterval < 0 {
		bad("report-interval", secs(o.ReportInterval), "a number of seconds >= 0 (0 = off)")
	}
	if !slices.Contains(RandTypes(), o.RandType) {
		bad("rand-type", o.RandType, "one of uniform, gaussian, special, pareto, zipfian")
	}
	minInt("rand-spec-iter", o.RandSpecIter, 1)
	if o.RandSpecPct < 0 || o.RandSpecPct > 100 {
		bad("rand-spec-pct", itoa(o.RandSpecPct), "an integer in [0,100]")
	}
	if o.RandSpecRes < 0 || o.RandSpecRes > 99 {
		bad("rand-spec-res", itoa(o.RandSpecRes), "an integer in [0,99]")
	}
	if !(o.RandParetoH > 0 && o.RandParetoH < 1) {
		bad("rand-pareto-h", ftoa(o.RandParetoH), "a number in (0,1)")
	}
	if !(o.RandZipfianExp >= 0) {
		bad("rand-zipfian-exp", ftoa(o.RandZipfianExp), "a number >= 0")
	}
	if o.PSMode != PSAuto && o.PSMode != PSDisable {
		bad("db-ps-mode", o.PSMode, "auto or disable")
	}
	if !(o.Percentile >= 0 && o.Percentile <= 100) {
		bad("percentile", ftoa(o.Percentile), "a number in [0,100] (0 = off)")
	}
	for _, p := range o.ExtraPercentiles {
		if !(p > 0 && p <= 100) {
			bad("percentile", percentileList(o), "numbers in (0,100] separated by commas, or 0 alone (= off)")
			break
		}
	}
	if o.Percentile == 0 && len(o.ExtraPercentiles) > 0 {
		bad("percentile", percentileList(o), "0 (= off) alone, or numbers in (0,100] separated by commas")
	}
	if o.Histogram && o.Percentile == 0 {
		bad("histogram", "on", "--percentile other than 0 (sysbench: --histogram cannot be used with --percentile=0)")
	}
	minInt("range-size", o.RangeSize, 1)
	for _, c := range []struct {
		flag string
		v    int
	}{
		{"point-selects", o.PointSelects}, {"simple-ranges", o.SimpleRanges},
		{"sum-ranges", o.SumRanges}, {"order-ranges", o.OrderRanges},
		{"distinct-ranges", o.DistinctRanges}, {"index-updates", o.IndexUpdates},
		{"non-index-updates", o.NonIndexUpdates}, {"delete-inserts", o.DeleteInserts},
	} {
		minInt(c.flag, c.v, 0)
	}
	if o.Rate < 0 {
		bad("rate", itoa(o.Rate), "an integer >= 0 (0 = unlimited)")
	}
	if o.WriterHang < 0 {
		bad("writer-hang", secs(o.WriterHang), "a number of seconds >= 0 (0 = the default, 2 s)")
	}
	if o.Warmup < 0 {
		bad("warmup-time", secs(o.Warmup), "a number of seconds >= 0")
	}
	if !engineRE.MatchString(o.MysqlEngine) {
		bad("mysql-storage-engine", o.MysqlEngine, "an engine name of letters, digits and _")
	}
	return errors.Join(errs...)
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
func ftoa(f float64) string       { return strconv.FormatFloat(f, 'f', -1, 64) }

// ignores reports whether MySQL error code is in the ignore list.
func (o *Options) ignores(code uint16) bool {
	return o.IgnoreAllErrors || slices.Contains(o.IgnoreErrors, code)
}
