package sampler

import (
	"testing"

	"github.com/habench/habench/topology"
)

func TestReplicaStatusSamples(t *testing.T) {
	maria := topology.CapabilitiesFor(topology.MariaDB, topology.V(10, 11, 0))
	mysql := topology.CapabilitiesFor(topology.MySQL, topology.V(9, 7, 0))
	mariaCols := []string{"Slave_IO_State", "Slave_IO_Running", "Slave_SQL_Running", "Seconds_Behind_Master"}
	mysqlCols := []string{"Replica_IO_State", "Replica_IO_Running", "Replica_SQL_Running", "Seconds_Behind_Source"}
	for _, c := range []struct {
		name       string
		caps       topology.Capabilities
		cols       []string
		rows       []map[string]string
		io, sql, b float64
	}{
		{"mariadb healthy", maria, mariaCols,
			[]map[string]string{{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes", "Seconds_Behind_Master": "3"}}, 1, 1, 3},
		{"mariadb sql stopped", maria, mariaCols,
			[]map[string]string{{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "No"}}, 1, 0, -1},
		{"mysql connecting", mysql, mysqlCols,
			[]map[string]string{{"Replica_IO_Running": "Connecting", "Replica_SQL_Running": "Yes", "Seconds_Behind_Source": "0"}}, 0, 1, 0},
		{"mysql two channels", mysql, mysqlCols, []map[string]string{
			{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Seconds_Behind_Source": "2"},
			{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Seconds_Behind_Source": "7"}}, 1, 1, 7},
		{"mysql one channel down", mysql, mysqlCols, []map[string]string{
			{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "No"},
			{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Seconds_Behind_Source": "7"}}, 1, 0, -1},
	} {
		got, err := replicaStatusSamples(c.caps, c.cols, c.rows)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := []Sample{{Metric: "io_running", Value: c.io}, {Metric: "sql_running", Value: c.sql}, {Metric: "seconds_behind_source", Value: c.b}}
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("%s: got %v, want %v", c.name, got, want)
		}
	}
	if _, err := replicaStatusSamples(maria, mariaCols, nil); err == nil {
		t.Error("no rows: want an error (replication not configured)")
	}
	if _, err := replicaStatusSamples(mysql, mariaCols, []map[string]string{{"Slave_IO_Running": "Yes"}}); err == nil {
		t.Error("MySQL 9.7 caps on old column names: want an error")
	}
}

func TestSemiSyncDeltas(t *testing.T) {
	s := NewSemiSync()
	p := "Rpl_semi_sync_master_"
	st := func(status string, yes, no, waits, waitTime string) map[string]string {
		return map[string]string{p + "status": status, p + "clients": "1", p + "yes_tx": yes, p + "no_tx": no,
			p + "tx_avg_wait_time": "250", p + "tx_waits": waits, p + "tx_wait_time": waitTime}
	}
	check := func(step string, got []Sample, want map[string]float64) {
		t.Helper()
		for k, v := range want {
			if g, ok := value(fill(got), "n", k); !ok || g != v {
				t.Errorf("%s: %s = %v (present %v), want %v", step, k, g, ok, v)
			}
		}
	}
	out, err := s.sourceSamples("n", p, st("ON", "100", "5", "100", "30000"))
	if err != nil {
		t.Fatal(err)
	}
	check("first", out, map[string]float64{"semisync_on": 1, "semisync_clients": 1, "semisync_yes_tx": 0, "semisync_no_tx": 0, "semisync_avg_wait_us": 250, "semisync_interval_avg_wait_us": 0})
	out, _ = s.sourceSamples("n", p, st("ON", "130", "5", "130", "33000"))
	check("second", out, map[string]float64{"semisync_yes_tx": 30, "semisync_no_tx": 0, "semisync_interval_avg_wait_us": 100})
	out, _ = s.sourceSamples("other", p, st("OFF", "7", "3", "0", "0"))
	check("other node first", out, map[string]float64{"semisync_on": 0, "semisync_yes_tx": 0})
	out, _ = s.sourceSamples("n", p, st("OFF", "130", "9", "130", "33000"))
	check("third", out, map[string]float64{"semisync_on": 0, "semisync_yes_tx": 0, "semisync_no_tx": 4})
	out, _ = s.sourceSamples("n", p, st("ON", "2", "0", "2", "500")) // server restarted
	check("reset", out, map[string]float64{"semisync_yes_tx": 2, "semisync_no_tx": 0})
	if _, err := s.sourceSamples("n", p, map[string]string{}); err == nil {
		t.Error("no semi-sync variables: want an error")
	}
}

func fill(s []Sample) []Sample {
	for i := range s {
		s[i].Node = "n"
	}
	return s
}
