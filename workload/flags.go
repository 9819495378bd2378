package workload

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// NormalizeFlagName maps "_" to "-" so that sysbench's two spellings of an
// option (--table_size and --table-size) name the same flag.
func NormalizeFlagName(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// BindFlags registers sysbench's run/prepare option names on fs, bound to o (sysbench
// 1.0.20's options unless the usage says "sysbench 1.1's option" or "habench:");
// the current values of o are the defaults (pass DefaultOptions()). Durations
// are given in seconds as sysbench does (--time=60); Go durations ("1m30s")
// are accepted too. Booleans accept on/off, true/false, yes/no, 1/0 and a bare
// --flag. It sets fs's normalize func to NormalizeFlagName, so --table_size
// and --table-size are the same flag.
func BindFlags(fs *pflag.FlagSet, o *Options) {
	fs.SetNormalizeFunc(NormalizeFlagName)
	fs.IntVar(&o.Tables, "tables", o.Tables, "number of tables")
	fs.IntVar(&o.TableSize, "table-size", o.TableSize, "number of rows per table")
	fs.IntVar(&o.Threads, "threads", o.Threads, "number of threads (worker connections) to use")
	fs.Var(secondsValue{&o.Time}, "time", "limit for total execution time in seconds (0 = no limit)")
	fs.Int64Var(&o.Events, "events", o.Events, "limit for total number of events (0 = no limit)")
	fs.Var(secondsValue{&o.ReportInterval}, "report-interval", "periodically report intermediate statistics with this interval in seconds (0 = off)")
	fs.StringVar(&o.RandType, "rand-type", o.RandType, "random numbers distribution {uniform, gaussian, special, pareto, zipfian} "+
		"(zipfian and the default uniform are sysbench 1.1's; 1.0.20 defaults to special)")
	fs.Int64Var(&o.RandSeed, "rand-seed", o.RandSeed, "seed for random number generators (0 = current time)")
	fs.IntVar(&o.RandSpecIter, "rand-spec-iter", o.RandSpecIter, "number of iterations for the special and gaussian distributions")
	fs.IntVar(&o.RandSpecPct, "rand-spec-pct", o.RandSpecPct, "percentage of the entire range where 'special' values will fall in the special distribution")
	fs.IntVar(&o.RandSpecRes, "rand-spec-res", o.RandSpecRes, "percentage of 'special' values to use for the special distribution")
	fs.Float64Var(&o.RandParetoH, "rand-pareto-h", o.RandParetoH, "shape parameter for the Pareto distribution")
	fs.Float64Var(&o.RandZipfianExp, "rand-zipfian-exp", o.RandZipfianExp, "shape parameter (exponent, theta) for the Zipfian distribution "+
		"(sysbench 1.1's option; sysbench 1.0.20 refuses it)")
	fs.StringVar(&o.PSMode, "db-ps-mode", o.PSMode, "prepared statements usage mode {auto, disable}")
	fs.Var(percentileValue{o}, "percentile", "percentile to calculate in latency statistics (1-100); 0 disables it. "+
		"habench: several, e.g. 95,99,99.9 (interval lines show the first, the summary each)")
	boolFlag(fs, &o.Histogram, "histogram", "print latency histogram in report")
	fs.IntVar(&o.RangeSize, "range-size", o.RangeSize, "range size for range SELECT queries")
	fs.IntVar(&o.PointSelects, "point-selects", o.PointSelects, "number of point SELECT queries per transaction")
	fs.IntVar(&o.SimpleRanges, "simple-ranges", o.SimpleRanges, "number of simple range SELECT queries per transaction")
	fs.IntVar(&o.SumRanges, "sum-ranges", o.SumRanges, "number of SELECT SUM() queries per transaction")
	fs.IntVar(&o.OrderRanges, "order-ranges", o.OrderRanges, "number of SELECT ORDER BY queries per transaction")
	fs.IntVar(&o.DistinctRanges, "distinct-ranges", o.DistinctRanges, "number of SELECT DISTINCT queries per transaction")
	fs.IntVar(&o.IndexUpdates, "index-updates", o.IndexUpdates, "number of UPDATE index queries per transaction")
	fs.IntVar(&o.NonIndexUpdates, "non-index-updates", o.NonIndexUpdates, "number of UPDATE non-index queries per transaction")
	fs.IntVar(&o.DeleteInserts, "delete-inserts", o.DeleteInserts, "number of DELETE/INSERT combinations per transaction")
	boolFlag(fs, &o.RangeSelects, "range-selects", "enable/disable all range SELECT queries")
	boolFlag(fs, &o.SkipTrx, "skip-trx", "don't start explicit transactions and execute all queries in the AUTOCOMMIT mode")
	fs.Var(ignoreErrorsValue{o}, "mysql-ignore-errors", "list of MySQL error codes to ignore (roll back, count, retry the transaction), or 'all' or 'none'; a lost connection (2013, 2006) ends the run unless ignored, then the worker reconnects")
	fs.IntVar(&o.Rate, "rate", o.Rate, "average transactions rate (0 = unlimited). habench: latency counts from each event's scheduled arrival, "+
		"as in sysbench; the service time is reported apart, and a WARNING says when the run ended over 1 s behind")
	fs.Var(secondsValue{&o.Warmup}, "warmup-time", "run events for this many seconds with statistics disabled before the measured run "+
		"(sysbench 1.1's option; sysbench 1.0.20 refuses it)")
	fs.Var(secondsValue{&o.WriterHang}, "writer-hang", "habench: with --writer auto, a worker whose transaction has been in progress this many seconds "+
		"while the cluster names another writer gives it up (an unknown outcome) and moves to that writer")
	boolFlag(fs, &o.CreateSecondary, "create-secondary", "create a secondary index on k in addition to the PRIMARY KEY")
	boolFlag(fs, &o.AutoInc, "auto-inc", "declare id AUTO_INCREMENT (schema only: prepare always inserts explicit ids 1..table-size)")
	fs.StringVar(&o.MysqlEngine, "mysql-storage-engine", o.MysqlEngine, "storage engine")
}

// ConnFlags are sysbench's connection options before they become a Target.
type ConnFlags struct {
	// Hosts is --mysql-host, a comma list (default localhost, connected over TCP).
	Hosts []string
	// Ports is --mysql-port, a comma list (default 3306).
	Ports []int
	// User is --mysql-user (default sbtest).
	User string
	// Password is --mysql-password (default empty).
	Password string
	// DB is --mysql-db (default sbtest).
	DB string
	// Sockets is --mysql-socket, a comma list of unix socket paths; when set it
	// wins over hosts and ports.
	Sockets []string
}

// DefaultConnFlags returns sysbench's connection defaults.
func DefaultConnFlags() ConnFlags {
	return ConnFlags{Hosts: []string{"localhost"}, Ports: []int{3306}, User: "sbtest", DB: "sbtest"}
}

// BindConnFlags registers --mysql-host, --mysql-port, --mysql-user,
// --mysql-password, --mysql-db and --mysql-socket on fs, bound to t (zero
// fields get sysbench's defaults first). It also sets NormalizeFlagName.
func BindConnFlags(fs *pflag.FlagSet, t *ConnFlags) {
	d := DefaultConnFlags()
	if t.Hosts == nil {
		t.Hosts = d.Hosts
	}
	if t.Ports == nil {
		t.Ports = d.Ports
	}
	if t.User == "" {
		t.User = d.User
	}
	if t.DB == "" {
		t.DB = d.DB
	}
	fs.SetNormalizeFunc(NormalizeFlagName)
	fs.Var(&listValue{p: &t.Hosts}, "mysql-host", "MySQL server host(s), comma separated; worker i uses entry i mod n")
	fs.Var(&portsValue{p: &t.Ports}, "mysql-port", "MySQL server port(s), comma separated")
	fs.StringVar(&t.User, "mysql-user", t.User, "MySQL user")
	fs.StringVar(&t.Password, "mysql-password", t.Password, "MySQL password")
	fs.StringVar(&t.DB, "mysql-db", t.DB, "MySQL database name")
	fs.Var(&listValue{p: &t.Sockets}, "mysql-socket", "MySQL socket path(s), comma separated; overrides --mysql-host/--mysql-port")
}

// Target turns the flags into a Target. Like sysbench, hosts and ports cycle
// independently: with H hosts and P ports there are lcm(H,P) endpoints, the
// k-th being (Hosts[k%H], Ports[k%P]); so one host with three ports gives
// three endpoints. Endpoint names are "host:port" (or the socket path).
func (c ConnFlags) Target() (Target, error) {
	t := Target{User: c.User, Password: c.Password, DB: c.DB}
	if len(c.Sockets) > 0 {
		for _, s := range c.Sockets {
			if s == "" {
				return Target{}, fmt.Errorf("--mysql-socket %q: want non-empty paths", strings.Join(c.Sockets, ","))
			}
			t.Endpoints = append(t.Endpoints, Endpoint{Name: s, Socket: s})
		}
		return t, t.Validate()
	}
	if len(c.Hosts) == 0 {
		return Target{}, fmt.Errorf("--mysql-host %q: want at least one host", "")
	}
	if len(c.Ports) == 0 {
		return Target{}, fmt.Errorf("--mysql-port %q: want at least one port", "")
	}
	for _, h := range c.Hosts {
		if h == "" {
			return Target{}, fmt.Errorf("--mysql-host %q: want non-empty host names", strings.Join(c.Hosts, ","))
		}
	}
	n := lcm(len(c.Hosts), len(c.Ports))
	for k := 0; k < n; k++ {
		h, p := c.Hosts[k%len(c.Hosts)], c.Ports[k%len(c.Ports)]
		t.Endpoints = append(t.Endpoints, Endpoint{Name: net.JoinHostPort(h, strconv.Itoa(p)), Host: h, Port: p})
	}
	return t, t.Validate()
}

func lcm(a, b int) int {
	g, x := a, b
	for x != 0 {
		g, x = x, g%x
	}
	return a / g * b
}

// secondsValue is a time.Duration flag given in seconds (sysbench style) or as
// a Go duration.
type secondsValue struct{ p *time.Duration }

func (v secondsValue) String() string {
	if v.p == nil {
		return "0"
	}
	return secs(*v.p)
}

func (v secondsValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e9 {
			return fmt.Errorf("want a number of seconds")
		}
		*v.p = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a number of seconds or a duration like 90s")
	}
	*v.p = d
	return nil
}

func (v secondsValue) Type() string { return "seconds" }

// sbBoolValue accepts sysbench's on/off besides Go's boolean spellings.
type sbBoolValue struct{ p *bool }

func boolFlag(fs *pflag.FlagSet, p *bool, name, usage string) {
	f := fs.VarPF(sbBoolValue{p}, name, "", usage)
	f.NoOptDefVal = "on"
}

func (v sbBoolValue) String() string {
	if v.p != nil && *v.p {
		return "on"
	}
	return "off"
}

func (v sbBoolValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "on", "true", "yes", "1", "t", "y":
		*v.p = true
	case "off", "false", "no", "0", "f", "n":
		*v.p = false
	default:
		return fmt.Errorf("want on or off")
	}
	return nil
}

func (v sbBoolValue) Type() string     { return "on|off" }
func (v sbBoolValue) IsBoolFlag() bool { return true }

// ignoreErrorsValue parses --mysql-ignore-errors: a comma list of codes,
// "all" or "none".
type ignoreErrorsValue struct{ o *Options }

func (v ignoreErrorsValue) String() string {
	if v.o == nil {
		return ""
	}
	if v.o.IgnoreAllErrors {
		return "all"
	}
	if len(v.o.IgnoreErrors) == 0 {
		return "none"
	}
	s := make([]string, len(v.o.IgnoreErrors))
	for i, c := range v.o.IgnoreErrors {
		s[i] = strconv.Itoa(int(c))
	}
	return strings.Join(s, ",")
}

func (v ignoreErrorsValue) Set(s string) error {
	codes, all, err := ParseIgnoreErrors(s)
	if err != nil {
		return err
	}
	v.o.IgnoreErrors, v.o.IgnoreAllErrors = codes, all
	return nil
}

func (v ignoreErrorsValue) Type() string { return "list" }

// ParseIgnoreErrors parses a --mysql-ignore-errors value: "all", "none" (or
// empty), or a comma list of error codes in 1..65535.
func ParseIgnoreErrors(s string) (codes []uint16, all bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all":
		return nil, true, nil
	case "none", "":
		return []uint16{}, false, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil || n == 0 {
			return nil, false, fmt.Errorf("want error codes in 1..65535 separated by commas, or all, or none")
		}
		codes = append(codes, uint16(n))
	}
	return codes, false, nil
}

// percentileValue parses --percentile: one number (sysbench) or a comma list (habench).
type percentileValue struct{ o *Options }

func (v percentileValue) String() string {
	if v.o == nil {
		return ""
	}
	return percentileList(*v.o)
}

func (v percentileValue) Set(s string) error {
	var ps []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(p) {
			return fmt.Errorf("want a number in [0,100], or several separated by commas (95,99,99.9)")
		}
		ps = append(ps, p)
	}
	v.o.Percentile, v.o.ExtraPercentiles = ps[0], nil
	if len(ps) > 1 {
		v.o.ExtraPercentiles = ps[1:]
	}
	return nil
}

func (v percentileValue) Type() string { return "list" }

// percentileList renders Percentile and ExtraPercentiles as --percentile takes them.
func percentileList(o Options) string {
	s := []string{ftoa(o.Percentile)}
	for _, p := range o.ExtraPercentiles {
		s = append(s, ftoa(p))
	}
	return strings.Join(s, ",")
}

// listValue is a comma-separated string list flag; setting it replaces the default.
type listValue struct {
	p   *[]string
	set bool
}

func (v *listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v *listValue) Set(s string) error {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if !v.set {
		*v.p = nil
		v.set = true
	}
	*v.p = append(*v.p, out...)
	return nil
}

func (v *listValue) Type() string { return "list" }

// portsValue is a comma-separated port list flag.
type portsValue struct {
	p   *[]int
	set bool
}

func (v *portsValue) String() string {
	if v.p == nil {
		return ""
	}
	s := make([]string, len(*v.p))
	for i, p := range *v.p {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func (v *portsValue) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("want ports in 1..65535 separated by commas")
		}
		out = append(out, n)
	}
	if !v.set {
		*v.p = nil
		v.set = true
	}
	*v.p = append(*v.p, out...)
	return nil
}

func (v *portsValue) Type() string { return "list" }

// OptionValues renders o as sysbench option names and values, exactly as BindFlags would
// print and parse them ("time": "10", "table-size": "10000"): for manifests and reports.
func OptionValues(o Options) map[string]string {
	fs := pflag.NewFlagSet("values", pflag.ContinueOnError)
	c := o
	BindFlags(fs, &c)
	m := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) { m[f.Name] = f.Value.String() })
	return m
}
