package topology

import (
	"fmt"
	"strconv"
	"time"
)

func init() {
	RegisterKind(KindDef{
		Kind: SemiSync, Existing: true, Order: 30,
		Summary:  "like async, the source waits for replica acknowledgements",
		Validate: validateSemiSync,
		Plan: func(spec Spec, caps Capabilities, addr Addr) (Plan, error) {
			return planSemiSync(spec, caps, addr), nil
		},
		Samplers:   []string{"heartbeat", "gtid", "replica", "semisync", "host"},
		Promotable: true,
	})
}

// validateSemiSync: async's node count, then the semisync section.
func validateSemiSync(s *Spec) error {
	if err := validateReplicated(s); err != nil {
		return err
	}
	if s.SemiSync.WaitPoint != "AFTER_SYNC" && s.SemiSync.WaitPoint != "AFTER_COMMIT" {
		return &FieldError{"semisync.wait_point", s.SemiSync.WaitPoint, "want AFTER_SYNC or AFTER_COMMIT"}
	}
	if s.SemiSync.Timeout < time.Millisecond {
		return &FieldError{"semisync.timeout", s.SemiSync.Timeout, "want at least 1ms"}
	}
	if s.SemiSync.WaitForReplicas < 1 || s.SemiSync.WaitForReplicas > s.Nodes-1 {
		return &FieldError{"semisync.wait_for_replicas", s.SemiSync.WaitForReplicas, fmt.Sprintf("want 1 to %d (the number of replicas)", s.Nodes-1)}
	}
	if c := CapabilitiesFor(s.Flavor, Version{}); c.GTIDKind != "" && !c.SemiSyncWaitCount && s.SemiSync.WaitForReplicas != 1 {
		return &FieldError{"semisync.wait_for_replicas", s.SemiSync.WaitForReplicas, FlavorOf(s.Flavor).Title + " always waits for exactly 1 replica"}
	}
	return nil
}

// planSemiSync: like async, with semi-synchronous acknowledgement. The source waits at
// WaitPoint (AFTER_SYNC by default) for WaitForReplicas acks, up to Timeout before
// falling back to asynchronous. MySQL loads semisync_source/semisync_replica plugins
// (semisync_master/semisync_slave before 8.0.26); MariaDB >= 10.3.3 has it built in.
// Plugin variables are written with the loose- prefix and read back after start.
func planSemiSync(spec Spec, caps Capabilities, addr Addr) Plan {
	v := caps.SemiSyncNames()
	var src, rep []Option
	if v.SourceLibrary != "" {
		// Every node loads both plugins so a replica can be promoted later.
		lib := v.SourceLibrary + ";" + v.ReplicaLibrary
		src = append(src, Option{"plugin_load_add", lib})
		rep = append(rep, Option{"plugin_load_add", lib})
	}
	loose := func(name string) string {
		if v.SourceLibrary != "" {
			return "loose_" + name
		}
		return name
	}
	src = append(src,
		Option{loose(v.SourceEnabled), "ON"},
		Option{loose(v.Timeout), msString(spec.SemiSync.Timeout)},
	)
	if v.WaitPoint != "" {
		src = append(src, Option{loose(v.WaitPoint), spec.SemiSync.WaitPoint})
	}
	if v.WaitCount != "" {
		src = append(src, Option{loose(v.WaitCount), strconv.Itoa(spec.SemiSync.WaitForReplicas)})
	}
	rep = append(rep, Option{loose(v.ReplicaEnabled), "ON"})
	p := planReplicated(spec, caps, addr, src, rep)
	// Every replica, not only wait_for_replicas of them: a deployed topology has all its
	// replicas acknowledging before the first run.
	p.Steps = append(p.Steps, Step{Node: p.Nodes[0].Name, Desc: "wait for semi-sync replicas", Wait: WaitSemiSyncReady, Replicas: len(p.Nodes) - 1})
	return p
}
