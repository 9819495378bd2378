package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/topology"
)

// doctorLine returns the line of doctor's output for host dest ("" when none).
func doctorLine(out, dest string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, dest+": ") {
			return l
		}
	}
	return ""
}

var clockRe = regexp.MustCompile(`clock ([+-][0-9.]+)ms ±([0-9.]+)ms`)

// TestDoctorHosts: `doctor --hosts` on three namespaces with sshd (by address, through an
// ssh_config of the test's): every line says ssh ok, root, the MariaDB server and its
// version, the Galera library, and a clock offset of 0 within its uncertainty (the hosts
// share this machine's clock), and that each host reaches the other two. Then a listener
// on 4567 on host 2 is named on its line, host 3 not answering host 1 (a blackhole
// route) is "filtered" on host 1's line and "no route" on host 3's, with the command
// that repeats a failed probe by hand, which run gives the same answers (issue 31), and
// an unused address of the lab's subnet is one line and exit status 1 (the other host's
// line stays ok: no probes to it).
func TestDoctorHosts(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 3, testhost.Options{SSH: true})
	state := stateDir(t)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	body := fmt.Sprintf("Host %s\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n", fmt.Sprintf("198.18.%d.*", lab.Subnet), lab.Key, lab.KnownHosts)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, h := range lab.Hosts {
		addrs = append(addrs, h.Addr)
	}
	doctor := func(hosts ...string) result {
		r := habench(t, state, "doctor", "--hosts", strings.Join(hosts, ","), "--ssh-config", cfg)
		t.Logf("doctor --hosts %s: exit %d\n%s%s", strings.Join(hosts, ","), r.code, r.stdout, r.stderr)
		return r
	}
	// Node ports 23306-23309 and what the kinds derive from them: Galera's standard 4567,
	// 4568, 4444 and its offsets (SQL port + 10000, 20000, 30000), which include the group's XCom.
	ports := cluster.HostsCheck{BasePort: topology.DefaultHostsBasePort}.Ports()
	if len(ports) != 19 || !slices.Contains(ports, 4567) || !slices.Contains(ports, 33306) || !slices.Contains(ports, 53309) {
		t.Errorf("ports doctor checks: %v", ports)
	}
	r := doctor(addrs...)
	if r.code != 0 {
		t.Fatalf("doctor on three usable hosts: exit %d", r.code)
	}
	for _, a := range addrs {
		line := doctorLine(r.stdout, a)
		for _, w := range []string{a + ": ok: ", "ssh ok", "root", "mariadbd 10.", "galera /usr/lib/galera/libgalera_smm.so", "ports free", "GiB free", fmt.Sprintf("reaches the other 2 host(s) on %d ports", len(ports))} {
			if !strings.Contains(line, w) {
				t.Errorf("%s: line %q lacks %q", a, line, w)
			}
		}
		m := clockRe.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s: no clock offset in %q", a, line)
			continue
		}
		off, _ := strconv.ParseFloat(m[1], 64)
		unc, _ := strconv.ParseFloat(m[2], 64)
		if off < -unc-0.01 || off > unc+0.01 { // 0.01: the line's rounding to 0.01 ms
			t.Errorf("%s: clock offset %v ms ± %v ms, want 0 within the uncertainty (one kernel clock)", a, off, unc)
		}
	}

	// A listener on host 2's 4567; host 3 answers host 1 no more (a blackhole route to it).
	h2, h3 := lab.Hosts[1], lab.Hosts[2]
	newSink(t, h2.Name, "0.0.0.0:4567")
	h3.Run(t, "ip", "route", "add", "blackhole", lab.Hosts[0].Addr+"/32") // no answer to host 1
	r = doctor(addrs...)
	if r.code != 1 {
		t.Errorf("doctor with a filtered port: exit %d, want 1", r.code)
	}
	if line := doctorLine(r.stdout, h2.Addr); !strings.Contains(line, ": warn: port 4567 (") || !strings.Contains(line, ") in use") {
		t.Errorf("host 2 with a listener on 4567: %q", line)
	}
	var portList []string
	for _, p := range slices.Sorted(slices.Values(ports)) {
		portList = append(portList, strconv.Itoa(p))
	}
	want := "to " + h3.Addr + " port " + strings.Join(portList, ",") + ": filtered (no answer in 3 s)"
	if line := doctorLine(r.stdout, addrs[0]); !strings.HasPrefix(line, addrs[0]+": UNUSABLE: "+want) {
		t.Errorf("host 1's line: %q, want it to start with %q", line, want)
	}
	checkProbeByHand(t, r.stdout, cfg, addrs[0], h3.Addr)
	if line := doctorLine(r.stdout, h3.Addr); !strings.HasPrefix(line, h3.Addr+": UNUSABLE: to "+addrs[0]+" port "+strings.Join(portList, ",")+": no route,") {
		t.Errorf("host 3 (a blackhole route to host 1: EINVAL): %q, want every port to %s \"no route\"", line, addrs[0])
	}
	if line := doctorLine(r.stdout, h2.Addr); !strings.Contains(line, "reaches the other 2 host(s)") {
		t.Errorf("host 2 reaches both: %q", line)
	}
	if first := strings.SplitN(r.stdout, "\n", 2)[0]; !strings.Contains(first, "UNUSABLE") {
		t.Errorf("problems first: the first line is %q", first)
	}

	// A host that is not there: one line, exit 1, and the usable host's line stays ok.
	gone := lab.Addr(99)
	r = doctor(addrs[0], gone)
	if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "1 of 2 host(s) cannot be used: "+gone) {
		t.Errorf("doctor with an unreachable host: exit %d, stderr %q; want exit 1 and one line naming %s", r.code, r.stderr, gone)
	}
	if line := doctorLine(r.stdout, gone); !strings.HasPrefix(line, gone+": UNUSABLE: cannot connect: ssh: ") || strings.Count("\n"+r.stdout, "\n"+gone) != 1 {
		t.Errorf("unreachable host: its line %q; output:\n%s", line, r.stdout)
	}
	if line := doctorLine(r.stdout, addrs[0]); !strings.HasPrefix(line, addrs[0]+": ok: ") {
		t.Errorf("the usable host beside an unreachable one: %q", line)
	}
}

// checkProbeByHand: doctor's output has, for host from, the command that repeats a failed
// probe by hand, with the ssh options doctor was given (-F cfg); run as printed it says
// what doctor said: no answer in 3 s (exit 124) to host to, and refused to the same port
// of another address (from's own: nothing listens there).
func checkProbeByHand(t *testing.T, out, cfg, from, to string) {
	t.Helper()
	var hand string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, from+": to check a port by hand (refused or open: reachable; no answer in 3 s: filtered): "); ok {
			hand = rest
		}
	}
	if hand == "" {
		t.Fatalf("no command to check by hand on %s's behalf:\n%s", from, out)
	}
	if !strings.HasPrefix(hand, "ssh -F "+cfg+" "+from+" 'timeout 3 bash --norc -c \"exec 3<>/dev/tcp/"+to+"/") {
		t.Errorf("the command to check by hand lacks doctor's ssh options (-F %s) or the probe to %s: %s", cfg, to, hand)
	}
	run := func(cmd string) string { // the line as printed, by a shell
		b, _ := exec.Command("sh", "-c", cmd).CombinedOutput()
		return strings.TrimSpace(string(b))
	}
	if got := run(hand); !strings.Contains(got, "exit 124") {
		t.Errorf("%s: %q, want exit 124 (no answer: filtered)", hand, got)
	}
	refused := strings.Replace(hand, "/dev/tcp/"+to+"/", "/dev/tcp/"+from+"/", 1)
	if got := run(refused); !strings.Contains(got, "exit 1:") || !strings.Contains(got, "Connection refused") {
		t.Errorf("%s: %q, want refused", refused, got)
	}
}
