package workload

import "testing"

// TestDataShape: what changes the prepared rows is in the shape, what does not is not.
func TestDataShape(t *testing.T) {
	o := DefaultOptions()
	o.Tables, o.TableSize = 8, 1000
	base := DataShape("oltp_read_write", o)
	if base["tables"] != "8" || base["table-size"] != "1000" || base["rand-seed"] != "0" || base["loaders"] != "" {
		t.Fatalf("shape %v", base)
	}
	same := o
	same.Threads, same.Time, same.PointSelects = 64, 0, 3 // run options only
	if got := DataShape("oltp_point_select", same); !equalShapes(got, base) {
		t.Errorf("run options changed the shape: %v != %v", got, base)
	}
	ins := o
	ins.AutoInc = false
	if got := DataShape("oltp_insert", ins); got["table-size"] != "0" || got["auto-inc"] != "off" {
		t.Errorf("oltp_insert without auto-inc loads no rows: %v", got)
	}
	seeded := o
	seeded.RandSeed, seeded.Threads = 7, 4
	if got := DataShape("oltp_read_write", seeded); got["rand-seed"] != "7" || got["loaders"] != "4" {
		t.Errorf("a fixed seed's rows depend on the loaders: %v", got)
	}
	sp := o
	sp.RandType = RandSpecial
	if got := DataShape("oltp_read_write", sp); got["rand-spec-pct"] != "1" || got["rand-spec-iter"] != "12" {
		t.Errorf("special's parameters: %v", got)
	}
	for _, f := range []func(*Options){
		func(o *Options) { o.CreateSecondary = false },
		func(o *Options) { o.MysqlEngine = "myisam" },
		func(o *Options) { o.RandType = RandPareto },
	} {
		x := o
		f(&x)
		if equalShapes(DataShape("oltp_read_write", x), base) {
			t.Errorf("%+v: same shape as the default", x)
		}
	}
}

func equalShapes(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
