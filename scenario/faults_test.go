package scenario_test

// The fault schedule of a scenario: its parameters, checked when the file is read, and
// the dry run's schedule of faults and probe writer.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestDryRunSchedule (issue 31): the dry run shows the scenario's faults at their times
// (after the workload starts, warm-up included) with their parameters and the end of one
// that lasts, marks those a scale puts at or after the workload's end as not injected, and
// shows the probe writer (on with faults, off with probe: false) with its interval and span.
// A fault's time is checked against that same end, the cell warm-up included: 32s is
// within 5s + 30s, 35s is not (review 31: it was checked against time alone).
func TestDryRunSchedule(t *testing.T) {
	y := `name: fd
topologies:
  - {name: g1, kind: galera, nodes: 3, flavor: mariadb}
workload: {test: oltp_read_write, options: {time: 30, tables: 2, table-size: 1000}}
cell: {warmup: 5s}
faults:
  - {at: 10s, action: kill, node: n3}
  - {at: 20s, action: start, node: n3}
  - {at: 25s, action: pause, node: n2, duration: 2s}
  - {at: 32s, action: kill, node: n2}
`
	late := strings.Replace(y, "at: 32s", "at: 35s", 1)
	if _, err := scenario.ParseScenario([]byte(late)); err == nil || err.Error() != `faults[3].at "35s": the workload runs 35s (warm-up + time): the fault would never happen` {
		t.Errorf("a fault at the end of warm-up 5s + time 30s: %v", err)
	}
	// Through the proxy (workload.via, or the via axis's proxy cells) the probe commits there.
	withProxy := strings.Replace(y, "flavor: mariadb}", "flavor: mariadb, proxy: haproxy}", 1)
	proxied := strings.Replace(withProxy, "time: 30, tables: 2, table-size: 1000}}", "time: 30, tables: 2, table-size: 1000}, via: proxy}", 1)
	print := func(y, scale string) string {
		p, err := mustParse(t, y).Plan(scale)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		p.Print(&out, nil)
		return out.String()
	}
	for _, c := range []struct {
		y, scale string
		want     []string
	}{
		{y, "", []string{
			"faults in every cell, at times after the workload starts (warm-up 5s included; the measured window 5s-35s):\n  at 10s  kill n3\n  at 20s  start n3\n  at 25s  pause n2 duration=2s (until 27s)\n  at 32s  kill n2\n",
			"probe writer in every cell: one numbered commit every 5ms on the current writer, from the workload's start to its end (0s-35s, warm-up included)",
		}},
		{y, "small", []string{
			"(warm-up 2s included; the measured window 2s-12s):\n  at 10s  kill n3\n  at 20s  start n3 (at or after the workload's end at 12s: not injected)\n",
			"from the workload's start to its end (0s-12s, warm-up included)",
		}},
		{y + "probe: false\n", "", []string{"probe writer: off (probe: false)"}},
		{y + "probe_interval: 50ms\n", "", []string{"probe writer in every cell: one numbered commit every 50ms on the current writer"}},
		{proxied, "", []string{"probe writer in every cell: one numbered commit every 5ms through the proxy's write endpoint, as the workload (its stale commits counted), from"}},
		{withProxy + "sweep: {via: [direct, proxy]}\n", "", []string{"one numbered commit every 5ms on the current writer (in the cells through the proxy: through its write endpoint, as the workload, its stale commits counted), from"}},
	} {
		txt := print(c.y, c.scale)
		for _, w := range c.want {
			if !strings.Contains(txt, w) {
				t.Errorf("scale %q: dry run lacks %q:\n%s", c.scale, w, txt)
			}
		}
	}
	if txt := print(strings.Split(y, "faults:")[0], ""); strings.Contains(txt, "fault") || strings.Contains(txt, "probe") {
		t.Errorf("without faults nor probe, the dry run names them:\n%s", txt)
	}
	// probe_interval within 1ms..10s, one line naming it and the value.
	for v, want := range map[string]string{
		"500us": `probe_interval "500µs": want 1ms to 10s`,
		"11s":   `probe_interval "11s": want 1ms to 10s`,
		"1ms":   "",
	} {
		_, err := scenario.ParseScenario([]byte(y + "probe_interval: " + v + "\n"))
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("probe_interval %s: %v, want %q", v, err, want)
		}
	}
}

// TestFaultArgs: parameters are checked against the action's declaration, each error one
// line naming the parameter and its value.
func TestFaultArgs(t *testing.T) {
	for _, c := range []struct {
		action string
		kvs    []string
		want   string
	}{
		{"kill", nil, ""},
		{"kill", []string{"duration=2s"}, `duration "2s": kill takes no parameters`},
		{"kill", []string{"duration"}, `parameter "duration": want KEY=VALUE`},
		{"nope", nil, `action "nope": want one of kill, stop, start, restart, partition, heal, promote`[:36]},
	} {
		_, err := scenario.ParseFaultArgs(c.action, c.kvs)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("ParseFaultArgs(%s, %q) = %q, want %q", c.action, c.kvs, got, c.want)
		}
	}
	a := &scenario.FaultSpec{Name: "z", Params: []scenario.FaultParam{scenario.DurationParam("duration", "how long")}}
	field := func(k string) string { return "faults[0]." + k }
	if _, err := scenario.CheckFaultArgs(a, scenario.FaultArgs{"duration": "2s"}, field); err != nil {
		t.Errorf("duration 2s: %v", err)
	}
	for _, bad := range []scenario.FaultArgs{{"duration": "0s"}, {"duration": "soon"}, {"for": "2s"}} {
		var fe *topology.FieldError
		_, err := scenario.CheckFaultArgs(a, bad, field)
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "faults[0].") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line naming faults[0].KEY", bad, err)
		}
	}
}

// TestScenarioFaultParams: a scenario's fault entry with a key its action does not take
// is refused when the file is read, naming faults[i].KEY, and so is a nested params:
// mapping or list, with the action's parameters and the entry as it should be written;
// the registry's checks of the kind (promote on a Galera cluster) run there too.
func TestScenarioFaultParams(t *testing.T) {
	base := `name: fp
topologies:
  - {name: a, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_write_only
  options: {time: 8}
faults:
`
	if _, err := scenario.ParseScenario([]byte(base + "  - {at: 3s, action: kill, node: writer}\n")); err != nil {
		t.Fatalf("a plain kill: %v", err)
	}
	_, err := scenario.ParseScenario([]byte(base + "  - {at: 3s, action: kill, node: writer, duration: 2s}\n"))
	if err == nil || !strings.Contains(err.Error(), `faults[0].duration "2s": kill takes no parameters`) {
		t.Errorf("kill with a duration: %v", err)
	}
	// A nested params: mapping (issue 31): the action's parameters named, the entry as
	// it should be written, with the user's own values; one line.
	_, err = scenario.ParseScenario([]byte(base + "  - at: 3s\n    action: pause\n    node: n2\n    params:\n      duration: 2s\n"))
	want := `line 11: faults[0].params "{duration: 2s}": a fault's parameters are keys of the fault itself, each with a single value: write {at: 3s, action: pause, node: n2, duration: 2s}; pause takes duration (`
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("pause with a nested params mapping: %v\nwant %s...", err, want)
	}
	_, err = scenario.ParseScenario([]byte(base + "  - {at: 3s, action: kill, node: n2, params: [a, b]}\n"))
	if err == nil || !strings.Contains(err.Error(), `faults[0].params "[a, b]": not a parameter: write {at: 3s, action: kill, node: n2}; kill takes no parameters`) {
		t.Errorf("kill with a params list: %v", err)
	}
	// The entry the error says to write is itself valid: only the action's parameters in
	// it, the keys it does not take named (review 31).
	for _, c := range []struct{ entry, unknown string }{
		{"{at: 3s, action: pause, node: n2, params: {duration: 2s}}", ""},
		{"{at: 3s, action: kill, node: n2, params: {duration: 3s}}", "; not a parameter of kill: duration"},
		{"{at: 3s, action: pause, node: n2, params: {duration: 3s, foo: 1}}", "; not a parameter of pause: foo"},
	} {
		_, err := scenario.ParseScenario([]byte(base + "  - " + c.entry + "\n"))
		_, rewrite, ok := strings.Cut(fmt.Sprint(err), ": write ")
		rewrite, _, _ = strings.Cut(rewrite, "; ")
		if !ok {
			t.Errorf("%s: %v, want the entry to write", c.entry, err)
			continue
		}
		if !strings.HasSuffix(fmt.Sprint(err), c.unknown) || (c.unknown == "" && strings.Contains(fmt.Sprint(err), "not a parameter of")) {
			t.Errorf("%s: %v, want %q at the end", c.entry, err, c.unknown)
		}
		if _, err := scenario.ParseScenario([]byte(base + "  - " + rewrite + "\n")); err != nil {
			t.Errorf("%s: the suggested %s is refused in turn: %v", c.entry, rewrite, err)
		}
	}
	g := strings.Replace(base, "kind: async, nodes: 2", "kind: galera, nodes: 3", 1)
	_, err = scenario.ParseScenario([]byte(g + "  - {at: 3s, action: promote, node: n2}\n"))
	if err == nil || !strings.Contains(err.Error(), `faults[0].action "promote": topology a is galera: promote is for kinds`) {
		t.Errorf("promote on galera: %v", err)
	}
}

// TestLargeTransactionAndRebuildRefused: bad parameters of large-transaction, and a rebuild
// where it cannot run (a kind without a rebuild, Galera on a provider that cannot empty a
// datadir), are refused in one line naming the field and the value when the faults are
// read; a group member's rebuild (by clone) is accepted, on hosts too.
func TestLargeTransactionAndRebuildRefused(t *testing.T) {
	galera := topology.Spec{Name: "g", Kind: topology.Galera, Nodes: 3, Flavor: topology.MariaDB}
	group := topology.Spec{Name: "gr", Kind: topology.Group, Nodes: 3, Flavor: topology.MySQL}
	async := topology.Spec{Name: "a", Kind: topology.Async, Nodes: 3, Flavor: topology.MariaDB}
	hosts := galera
	hosts.Provider = topology.ProviderHosts
	groupHosts := group
	groupHosts.Provider = topology.ProviderHosts
	for _, tc := range []struct {
		ev   scenario.FaultEvent
		tops []topology.Spec
		want string
	}{
		{scenario.FaultEvent{Action: "large-transaction", Node: "writer", Args: scenario.FaultArgs{"rows": "0"}}, []topology.Spec{galera}, "faults[0].rows \"0\": want a whole number of rows"},
		{scenario.FaultEvent{Action: "large-transaction", Node: "writer", Args: scenario.FaultArgs{"statement": "delete"}}, []topology.Spec{galera}, "faults[0].statement \"delete\": want insert-select or update"},
		{scenario.FaultEvent{Action: "large-transaction", Node: "writer", Args: scenario.FaultArgs{"table": "sbtest1"}}, []topology.Spec{galera}, "faults[0].table \"sbtest1\": want DB.TABLE"},
		{scenario.FaultEvent{Action: "large-transaction", Node: "writer", Args: scenario.FaultArgs{"rows": "1000", "statement": "update"}}, []topology.Spec{galera}, "faults[0].rows \"1000\": rows is for statement=insert-select"},
		{scenario.FaultEvent{Action: "rebuild", Node: "n3"}, []topology.Spec{async}, "faults[0].action \"rebuild\": cannot rebuild a node: kind async: only Galera nodes (by SST) and group members (by clone) can be rebuilt"},
		{scenario.FaultEvent{Action: "rebuild", Node: "n3"}, []topology.Spec{hosts}, "cannot rebuild a node: provider hosts cannot empty a node's datadir"},
	} {
		err := scenario.ValidateFaults([]scenario.FaultEvent{tc.ev}, tc.tops, "", 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %v on %s: %v, want one line with %q", tc.ev.Action, tc.ev.Args, tc.tops[0].Kind, err, tc.want)
		}
	}
	if err := scenario.ValidateFaults([]scenario.FaultEvent{{Action: "rebuild", Node: "n3"}, {Action: "large-transaction", Node: "writer", Args: scenario.FaultArgs{"rows": "1000", "statement": "insert-select", "table": "sbtest.big"}}},
		[]topology.Spec{galera}, "", 0); err != nil {
		t.Errorf("rebuild and large-transaction on a Galera sandbox: %v", err)
	}
	for _, g := range []topology.Spec{group, groupHosts} {
		if err := scenario.ValidateFaults([]scenario.FaultEvent{{Action: "rebuild", Node: "n3"}}, []topology.Spec{g}, "", 0); err != nil {
			t.Errorf("rebuild of a group member (%s provider): %v", g.Provider, err)
		}
	}
}

// TestPauseWithoutDurationNeedsResume: a scheduled pause without duration is refused on
// faults[i].duration unless a later resume of the same node follows (the run would leave
// the server stopped); with a duration, or with its resume, it is accepted.
func TestPauseWithoutDurationNeedsResume(t *testing.T) {
	async := topology.Spec{Name: "a", Kind: topology.Async, Nodes: 2, Flavor: topology.MariaDB}
	pause := func(at int, node string, args scenario.FaultArgs) scenario.FaultEvent {
		return scenario.FaultEvent{At: schema.Duration(time.Duration(at) * time.Second), Action: "pause", Node: node, Args: args}
	}
	resume := func(at int, node string) scenario.FaultEvent {
		return scenario.FaultEvent{At: schema.Duration(time.Duration(at) * time.Second), Action: "resume", Node: node}
	}
	for _, tc := range []struct {
		evs  []scenario.FaultEvent
		want string // "" for accepted
	}{
		{[]scenario.FaultEvent{pause(1, "n1", nil)}, `faults[0].duration "": a pause of n1 without duration needs a later resume of n1`},
		{[]scenario.FaultEvent{pause(1, "n1", nil), resume(2, "n2")}, `faults[0].duration`},
		{[]scenario.FaultEvent{resume(1, "n1"), pause(2, "n1", nil)}, `faults[1].duration`},
		{[]scenario.FaultEvent{pause(1, "n1", nil), resume(2, "n1")}, ""},
		{[]scenario.FaultEvent{pause(1, "n1", scenario.FaultArgs{"duration": "2s"})}, ""},
	} {
		err := scenario.ValidateFaults(tc.evs, []topology.Spec{async}, "", 0)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.evs, err, tc.want)
		}
	}
}
