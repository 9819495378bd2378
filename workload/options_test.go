package workload

import (
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultOptionsAreSysbench(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if o.Tables != 1 || o.TableSize != 10000 || o.Threads != 1 || o.Time != 10*time.Second ||
		o.Percentile != 95 || o.PSMode != PSAuto || o.RangeSize != 100 || o.PointSelects != 10 ||
		!slices.Equal(o.IgnoreErrors, []uint16{1213, 1020, 1205}) || !o.AutoInc || !o.CreateSecondary ||
		o.MysqlEngine != "innodb" || o.RandType != RandUniform || o.RandSpecPct != 1 || o.RandSpecRes != 75 ||
		o.RandParetoH != 0.2 || o.RandZipfianExp != 0.8 {
		t.Errorf("defaults differ from sysbench's: %+v", o)
	}
	// The default list must not alias the package variable.
	o.IgnoreErrors[0] = 1
	if DefaultIgnoreErrors[0] != 1213 {
		t.Error("DefaultOptions shares DefaultIgnoreErrors")
	}
}

func TestValidateNamesFlagAndValue(t *testing.T) {
	cases := []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Threads = -1 }, `--threads "-1": want an integer in [1,100000]`},
		{func(o *Options) { o.Threads = 0 }, `--threads "0"`},
		{func(o *Options) { o.Threads = 99999999999999 }, `--threads "99999999999999": want an integer in [1,100000]`},
		{func(o *Options) { o.Tables = 1 << 40 }, `--tables "1099511627776"`},
		{func(o *Options) { o.TableSize = 3000000000 }, `--table-size "3000000000": want an integer in [1,2147483647]`},
		{func(o *Options) { o.Tables = 0 }, `--tables "0"`},
		{func(o *Options) { o.TableSize = -5 }, `--table-size "-5"`},
		{func(o *Options) { o.Time = -2 * time.Second }, `--time "-2"`},
		{func(o *Options) { o.Events = -1 }, `--events "-1"`},
		{func(o *Options) { o.ReportInterval = -time.Second }, `--report-interval "-1"`},
		{func(o *Options) { o.RandType = "normal" }, `--rand-type "normal": want one of uniform, gaussian, special, pareto, zipfian`},
		{func(o *Options) { o.PSMode = "on" }, `--db-ps-mode "on": want auto or disable`},
		{func(o *Options) { o.Percentile = 101 }, `--percentile "101"`},
		{func(o *Options) { o.RangeSize = 0 }, `--range-size "0"`},
		{func(o *Options) { o.PointSelects = -1 }, `--point-selects "-1"`},
		{func(o *Options) { o.DeleteInserts = -3 }, `--delete-inserts "-3"`},
		{func(o *Options) { o.Rate = -10 }, `--rate "-10"`},
		{func(o *Options) { o.Warmup = -time.Second }, `--warmup-time "-1"`},
		{func(o *Options) { o.MysqlEngine = "innodb; DROP TABLE x" }, `--mysql-storage-engine "innodb; DROP TABLE x"`},
		{func(o *Options) { o.RandParetoH = 1 }, `--rand-pareto-h "1"`},
		{func(o *Options) { o.RandZipfianExp = -1 }, `--rand-zipfian-exp "-1"`},
		{func(o *Options) { o.RandSpecRes = 100 }, `--rand-spec-res "100"`},
		{func(o *Options) { o.RandSpecPct = 101 }, `--rand-spec-pct "101"`},
		{func(o *Options) { o.RandSpecIter = 0 }, `--rand-spec-iter "0"`},
	}
	for _, c := range cases {
		o := DefaultOptions()
		c.mod(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, c.want)
		}
	}
	o := DefaultOptions()
	o.Threads, o.Tables = 0, 0
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--threads") || !strings.Contains(err.Error(), "--tables") {
		t.Errorf("two problems: %v, want both named", err)
	}
}

func newFlagSet(o *Options, c *ConnFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	BindFlags(fs, o)
	BindConnFlags(fs, c)
	return fs
}

func TestFlagsSysbenchSpellings(t *testing.T) {
	o := DefaultOptions()
	var c ConnFlags
	fs := newFlagSet(&o, &c)
	err := fs.Parse([]string{
		"--table_size=500", "--tables=3", "--threads=8", "--time=60", "--report_interval=1",
		"--rand-type=special", "--db_ps_mode=disable", "--skip_trx=on", "--auto_inc=off",
		"--create-secondary=false", "--mysql-ignore-errors=1213,1062", "--rate=200", "--warmup-time=5",
		"--percentile=99", "--events=1000", "--point_selects=4", "--range-selects=off",
		"--mysql-host=h1,h2", "--mysql_port=3306,3307,3308", "--mysql-user=u",
		"--mysql-password=p", "--mysql-db=d",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	want.TableSize, want.Tables, want.Threads, want.Time, want.ReportInterval = 500, 3, 8, time.Minute, time.Second
	want.RandType, want.PSMode, want.SkipTrx, want.AutoInc, want.CreateSecondary = RandSpecial, PSDisable, true, false, false
	want.IgnoreErrors, want.Rate, want.Warmup, want.Percentile, want.Events = []uint16{1213, 1062}, 200, 5*time.Second, 99, 1000
	want.PointSelects, want.RangeSelects = 4, false
	if !optionsEqual(o, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	tg, err := c.Target()
	if err != nil {
		t.Fatal(err)
	}
	// 2 hosts x 3 ports cycle like sysbench: lcm = 6 endpoints.
	var got []string
	for _, e := range tg.Endpoints {
		got = append(got, e.Label())
	}
	wantEps := []string{"h1:3306", "h2:3307", "h1:3308", "h2:3306", "h1:3307", "h2:3308"}
	if !slices.Equal(got, wantEps) || tg.User != "u" || tg.Password != "p" || tg.DB != "d" {
		t.Errorf("target %+v endpoints %v, want %v", tg, got, wantEps)
	}
}

func TestFlagNormalisationSameFlag(t *testing.T) {
	for _, args := range [][]string{{"--table_size=123"}, {"--table-size=123"}, {"--table-size", "123"}} {
		o := DefaultOptions()
		var c ConnFlags
		fs := newFlagSet(&o, &c)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if o.TableSize != 123 {
			t.Errorf("%v: table size %d", args, o.TableSize)
		}
		if f1, f2 := fs.Lookup("table_size"), fs.Lookup("table-size"); f1 == nil || f1 != f2 {
			t.Errorf("table_size and table-size are different flags")
		}
	}
}

func TestFlagDefaultsAndSpecialValues(t *testing.T) {
	o := DefaultOptions()
	var c ConnFlags
	fs := newFlagSet(&o, &c)
	if err := fs.Parse([]string{"--mysql-ignore-errors=all", "--skip-trx", "--time=1m30s"}); err != nil {
		t.Fatal(err)
	}
	if !o.IgnoreAllErrors || !o.SkipTrx || o.Time != 90*time.Second {
		t.Errorf("all/bare bool/duration: %+v", o)
	}
	if !o.ignores(1062) {
		t.Error("--mysql-ignore-errors=all does not ignore 1062")
	}
	tg, err := c.Target()
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.Endpoints) != 1 || tg.Endpoints[0].Label() != "localhost:3306" || tg.User != "sbtest" || tg.DB != "sbtest" {
		t.Errorf("default target %+v", tg)
	}
	o2 := DefaultOptions()
	fs2 := newFlagSet(&o2, &ConnFlags{})
	if err := fs2.Parse([]string{"--mysql-ignore-errors=none"}); err != nil {
		t.Fatal(err)
	}
	if o2.ignores(1213) || o2.IgnoreAllErrors {
		t.Error("--mysql-ignore-errors=none still ignores 1213")
	}
	for _, bad := range [][]string{{"--mysql-ignore-errors=12x"}, {"--skip-trx=maybe"}, {"--time=soon"}, {"--mysql-port=0"}, {"--threads=abc"}} {
		o := DefaultOptions()
		fs := newFlagSet(&o, &ConnFlags{})
		fs.SetOutput(nopWriter{})
		if err := fs.Parse(bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad[0], "=", 2)[0][2:]) {
			t.Errorf("%v: err = %v, want a parse error naming the flag", bad, err)
		}
	}
	c3 := ConnFlags{Sockets: []string{"/tmp/a.sock"}, DB: "x"}
	tg3, err := c3.Target()
	if err != nil || len(tg3.Endpoints) != 1 || tg3.Endpoints[0].Socket != "/tmp/a.sock" {
		t.Errorf("socket target %+v %v", tg3, err)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func optionsEqual(a, b Options) bool {
	if !slices.Equal(a.IgnoreErrors, b.IgnoreErrors) {
		return false
	}
	a.IgnoreErrors, b.IgnoreErrors = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestLookupAndNames(t *testing.T) {
	names := Names()
	want := []string{"bulk_insert", "oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp_point_select",
		"oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete"}
	if !slices.Equal(names, want) {
		t.Errorf("Names() = %v", names)
	}
	for _, n := range names {
		w, err := Lookup(n)
		if err != nil || w.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, w, err)
		}
	}
	_, err := Lookup("oltp_rw")
	if err == nil || !strings.Contains(err.Error(), `"oltp_rw"`) || !strings.Contains(err.Error(), "oltp_read_write, oltp_read_only") {
		t.Errorf("Lookup(unknown) error %v, want it to list known names", err)
	}
}

func TestStatementMix(t *testing.T) {
	cases := []struct {
		name    string
		mod     func(*Options)
		r, w, o int
	}{
		{"oltp_read_write", nil, 14, 4, 2},
		{"oltp_read_only", nil, 14, 0, 2},
		{"oltp_write_only", nil, 0, 4, 2},
		{"oltp_point_select", nil, 1, 0, 0},
		{"oltp_update_index", nil, 0, 1, 0},
		{"oltp_update_non_index", nil, 0, 1, 0},
		{"oltp_insert", nil, 0, 1, 0},
		{"oltp_delete", nil, 0, 1, 0},
		{"oltp_read_write", func(o *Options) { o.SkipTrx = true }, 14, 4, 0},
		{"oltp_read_write", func(o *Options) { o.RangeSelects = false }, 10, 4, 2},
		{"oltp_read_write", func(o *Options) { o.PointSelects, o.DeleteInserts = 2, 3 }, 6, 8, 2},
		{"oltp_point_select", func(o *Options) { o.PointSelects = 10 }, 1, 0, 0},
	}
	for _, c := range cases {
		o := DefaultOptions()
		if c.mod != nil {
			c.mod(&o)
		}
		m, err := StatementMix(c.name, o)
		if err != nil {
			t.Fatal(err)
		}
		if m.Reads != c.r || m.Writes != c.w || m.Others != c.o || len(m.Statements) != c.r+c.w+c.o {
			t.Errorf("%s: mix %d/%d/%d (%d statements), want %d/%d/%d", c.name, m.Reads, m.Writes, m.Others, len(m.Statements), c.r, c.w, c.o)
		}
	}
	m, _ := StatementMix("oltp_read_write", DefaultOptions())
	want := []string{"BEGIN"}
	for i := 0; i < 10; i++ {
		want = append(want, "SELECT c FROM sbtest1 WHERE id=?")
	}
	want = append(want,
		"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
		"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
		"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
		"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
		"UPDATE sbtest1 SET k=k+1 WHERE id=?",
		"UPDATE sbtest1 SET c=? WHERE id=?",
		"DELETE FROM sbtest1 WHERE id=?",
		"INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
		"COMMIT")
	if !slices.Equal(m.Statements, want) {
		t.Errorf("oltp_read_write statements\n%q\nwant\n%q", m.Statements, want)
	}
	// Prepared statements per table: 9 for read_write, 5 for read_only.
	for name, n := range map[string]int{"oltp_read_write": 9, "oltp_read_only": 5, "oltp_write_only": 4, "oltp_point_select": 1, "oltp_insert": 0, "oltp_delete": 1} {
		o := DefaultOptions()
		w, _ := Lookup(name)
		if k := w.(*oltp).spec.stmtKinds(&o); len(k) != n {
			t.Errorf("%s prepares %d statements per table, want %d", name, len(k), n)
		}
	}
	if _, err := StatementMix("nope", DefaultOptions()); err == nil {
		t.Error("StatementMix(unknown) succeeded")
	}
}

func TestCreateTableSQL(t *testing.T) {
	o := DefaultOptions()
	want := "CREATE TABLE sbtest3(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=innodb"
	if got := CreateTableSQL(3, o); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	o.AutoInc, o.MysqlEngine = false, "rocksdb"
	if got := CreateTableSQL(1, o); !strings.Contains(got, "(id INTEGER NOT NULL, k") || !strings.HasSuffix(got, "ENGINE=rocksdb") {
		t.Errorf("auto-inc off: %s", got)
	}
}

// TestFlagHelpSaysWhoseOption: --help tells sysbench 1.0.20's options from sysbench
// 1.1's and habench's own extensions.
func TestFlagHelpSaysWhoseOption(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	BindFlags(fs, &o)
	for flag, want := range map[string]string{
		"warmup-time":      "sysbench 1.1's option; sysbench 1.0.20 refuses it",
		"rand-zipfian-exp": "sysbench 1.1's option; sysbench 1.0.20 refuses it",
		"rand-type":        "zipfian and the default uniform are sysbench 1.1's",
		"percentile":       "habench: several",
		"rate":             "habench: latency counts from each event's scheduled arrival",
	} {
		if u := fs.Lookup(flag).Usage; !strings.Contains(u, want) {
			t.Errorf("--%s usage %q lacks %q", flag, u, want)
		}
	}
	if u := fs.Lookup("histogram").Usage; strings.Contains(u, "habench") || strings.Contains(u, "1.1") {
		t.Errorf("--histogram is sysbench 1.0.20's: %q", u)
	}
}

// TestPercentileList: --percentile takes one value (sysbench) or several (habench), and
// refuses bad ones naming the flag.
func TestPercentileList(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	BindFlags(fs, &o)
	if err := fs.Parse([]string{"--percentile", "95,99,99.9"}); err != nil {
		t.Fatal(err)
	}
	if o.Percentile != 95 || !slices.Equal(o.ExtraPercentiles, []float64{99, 99.9}) || fs.Lookup("percentile").Value.String() != "95,99,99.9" {
		t.Errorf("parsed %v %v (%s)", o.Percentile, o.ExtraPercentiles, fs.Lookup("percentile").Value)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid list refused: %v", err)
	}
	for _, bad := range []string{"0,99", "95,101", "95,0"} {
		o := DefaultOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		BindFlags(fs, &o)
		if err := fs.Parse([]string{"--percentile", bad}); err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--percentile "`+bad+`"`) {
			t.Errorf("--percentile %s: %v, want an error naming --percentile and the value", bad, err)
		}
	}
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs, &o)
	if err := fs.Parse([]string{"--percentile", "95,x"}); err == nil {
		t.Error("--percentile 95,x accepted")
	}
}

func TestClientBound(t *testing.T) {
	for _, c := range []struct {
		cores float64
		cpus  int
		want  bool
	}{{1.85, 2, true}, {1.7, 2, false}, {0.95, 1, true}, {0, 0, false}} {
		r := &Result{ClientCPUCores: c.cores, ClientCPUs: c.cpus}
		if got := r.ClientBound(); got != c.want || (r.ClientBoundWarning() != "") != c.want {
			t.Errorf("%.2f of %d CPUs: bound %v, want %v", c.cores, c.cpus, got, c.want)
		}
	}
}
