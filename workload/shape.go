package workload

import (
	"strconv"
)

// DataShape returns what decides the rows Prepare of workload test writes with o, field ->
// value, in sysbench's option names: tables, table-size (0 for oltp_insert without
// auto-inc, which loads no rows), the schema (auto-inc, create-secondary,
// mysql-storage-engine), the k column's distribution (rand-type and its parameters) and
// the generator's seed. With a fixed rand-seed the rows also depend on how the tables are
// shared between loaders (loaders = min(threads, tables)); with rand-seed 0 the rows are
// random anyway and any such snapshot is as good as a new prepare. Two runs with equal
// shapes get equal tables from a prepare (for a fixed seed, the same rows).
func DataShape(test string, o Options) map[string]string {
	rows := o.TableSize
	if test == "oltp_insert" && !o.AutoInc {
		rows = 0
	}
	d := map[string]string{
		"tables":               strconv.Itoa(o.Tables),
		"table-size":           strconv.Itoa(rows),
		"auto-inc":             onOff(o.AutoInc),
		"create-secondary":     onOff(o.CreateSecondary),
		"mysql-storage-engine": o.MysqlEngine,
		"rand-type":            o.RandType,
		"rand-seed":            strconv.FormatInt(o.RandSeed, 10),
	}
	switch o.RandType {
	case RandSpecial:
		d["rand-spec-pct"], d["rand-spec-res"] = strconv.Itoa(o.RandSpecPct), strconv.Itoa(o.RandSpecRes)
		d["rand-spec-iter"] = strconv.Itoa(o.RandSpecIter)
	case RandGaussian:
		d["rand-spec-iter"] = strconv.Itoa(o.RandSpecIter)
	case RandPareto:
		d["rand-pareto-h"] = strconv.FormatFloat(o.RandParetoH, 'g', -1, 64)
	case RandZipfian:
		d["rand-zipfian-exp"] = strconv.FormatFloat(o.RandZipfianExp, 'g', -1, 64)
	}
	if o.RandSeed != 0 {
		d["loaders"] = strconv.Itoa(min(o.Threads, o.Tables))
	}
	return d
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
