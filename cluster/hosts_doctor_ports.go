package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/host"
)

// checkPorts names the listeners on ports (ss -Hltnp, else /proc/net/tcp{,6}).
func (r *HostReport) checkPorts(ctx context.Context, ports []int) {
	listening, err := r.listeners(ctx)
	if err != nil {
		r.Warnings = append(r.Warnings, "ports: "+err.Error())
		return
	}
	r.Listening = map[int]string{}
	var used []string
	for _, p := range ports {
		if proc, ok := listening[p]; ok {
			r.Listening[p] = proc
			if proc != "" {
				used = append(used, fmt.Sprintf("%d (%s)", p, proc))
			} else {
				used = append(used, strconv.Itoa(p))
			}
		}
	}
	if len(used) > 0 {
		r.Warnings = append(r.Warnings, "port "+strings.Join(used, ", ")+" in use")
		return
	}
	r.Facts = append(r.Facts, "ports free")
}

func joinInts(ps []int, sep string) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, sep)
}

// listeners returns the host's listening TCP ports and, where ss shows it, the process.
func (r *HostReport) listeners(ctx context.Context) (map[int]string, error) {
	if out, err := r.h.Run(ctx, "ss", "-Hltnp"); err == nil {
		return parseSSListen(string(out)), nil
	}
	m := map[int]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := r.h.ReadFile(ctx, f)
		if err != nil && f == "/proc/net/tcp" {
			return nil, err
		}
		for p := range listeningPorts(string(b)) {
			m[p] = ""
		}
	}
	return m, nil
}

// parseSSListen parses `ss -Hltnp` lines ("LISTEN 0 128 0.0.0.0:22 0.0.0.0:*
// users:(("sshd",pid=1,fd=3))") into port -> first process name ("" when not shown). Pure.
func parseSSListen(out string) map[int]string {
	m := map[int]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		local := f[3]
		p, err := strconv.Atoi(local[strings.LastIndexByte(local, ':')+1:])
		if err != nil {
			continue
		}
		proc := ""
		if i := strings.Index(l, `users:(("`); i >= 0 {
			rest := l[i+len(`users:(("`):]
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				proc = rest[:j]
			}
		}
		if m[p] == "" {
			m[p] = proc
		}
	}
	return m
}

// ProbeWait is how long a peer probe waits for an answer to its TCP connect before the
// port is called filtered: a SYN dropped on the way (a firewall's DROP, a blackhole route)
// or the host down. Three seconds take the SYN and its first two retransmissions (at 1
// and 3 s), so one lost packet is not a filtered port.
const ProbeWait = 3 * time.Second

// probeScript tries a TCP connection to every "ADDR PORT" argument after the first (the
// wait in seconds), all at once, and prints "ADDR PORT RC MS" per target: RC 0 an accepted
// connection, 1 refused or failed, 124 no answer within the wait (filtered); MS how long
// it took (- without bash 5's EPOCHREALTIME); a failed connect's message is bash's own
// line before it ("bash: line 6: /dev/tcp/ADDR/PORT: Connection refused"). It runs in ONE
// bash: each probe is a subshell (a fork, no new shell started, no start-up file read), so
// the wait measures the connects, not shells starting. The probe it replaces started a
// `bash -c` per port under `timeout 2`: each new bash read root's ~/.bashrc (bash does for
// commands sshd starts; pyenv init there took 2.5 s) and, on a busy host, dozens of
// shells starting at once took most of the 2 s: every port came out "filtered" while the
// same connects by hand were refused at once. bash is started with --norc --noprofile
// and without BASH_ENV (probeArgv).
const probeScript = `w=$1; shift
t0=${EPOCHREALTIME/[.,]/}; pids=(); targets=()
for t in "$@"; do
  ( a=${t% *}; p=${t#* }; s=${EPOCHREALTIME/[.,]/}
    exec 2>&1
    exec 3<>"/dev/tcp/$a/$p"; rc=$?
    e=${EPOCHREALTIME/[.,]/}; ms=-; [ -n "$s" ] && ms=$(((e - s) / 1000))
    echo "$a $p $rc $ms" ) &
  pids+=($!); targets+=("$t")
done
for ((i = 0; i < w * 20; i++)); do
  left=0; for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && { left=1; break; }; done
  [ "$left" = 0 ] && break
  sleep 0.05
done
e=${EPOCHREALTIME/[.,]/}; ms=-; [ -n "$t0" ] && ms=$(((e - t0) / 1000))
for i in "${!pids[@]}"; do
  if kill -0 "${pids[$i]}" 2>/dev/null; then kill -KILL "${pids[$i]}" 2>/dev/null; echo "${targets[$i]} 124 $ms"; fi
done
wait 2>/dev/null; true`

// probeArgv is the command that runs probeScript on a host with wait w over targets
// ("ADDR PORT"): bash without start-up files (--norc --noprofile, BASH_ENV unset), in the
// C locale (LC_ALL=C), so that bash's messages are the C library's English ones that
// parseProbes reads ("Connection refused"), whatever locale the host has or ssh forwards
// (LANG, LC_*: under de_DE a refused port says "Verbindungsaufbau abgelehnt").
func probeArgv(w time.Duration, targets []string) []string {
	return append([]string{"env", "-u", "BASH_ENV", "LC_ALL=C", "bash", "--norc", "--noprofile", "-c", probeScript, "bash", strconv.Itoa(int(w / time.Second))}, targets...)
}

// ProbeByHand is the command line that repeats one of doctor's peer probes by hand, from
// the machine doctor runs on, for a POSIX shell: ssh with sshArgs (the options doctor was
// given, host.SSH.UserArgs: -F, -l, -p, -i, -o; each quoted for the shell) to dest, then a
// TCP connect from there to addr:port ("Connection refused" or an open connection:
// reachable; nothing within the wait, exit 124: filtered).
func ProbeByHand(sshArgs []string, dest, addr string, port int) string {
	ssh := host.Quote(append(append([]string{"ssh"}, sshArgs...), dest))
	return fmt.Sprintf(`%s 'timeout %d bash --norc -c "exec 3<>/dev/tcp/%s/%d" && echo open || echo "exit $?: refused or failed (124: no answer, filtered)"'`,
		ssh, int(ProbeWait/time.Second), addr, port)
}

// checkPeers tries, from r's host, every port of every other connected host: a listener
// or "connection refused" is reachable; no answer within ProbeWait (filtered) or no route
// is a problem, since the cluster's members must reach each other on those ports. Each
// probe is logged at debug level (o.Log), with its result and how long it took.
func checkPeers(ctx context.Context, o HostsCheck, r *HostReport, all []*HostReport) {
	var targets []string
	peers := 0
	for _, p := range all {
		if p == r || !p.connected || p.Addr == "" || p.Addr == r.Addr {
			continue
		}
		peers++
		for _, port := range o.Ports() {
			targets = append(targets, p.Addr+" "+strconv.Itoa(port))
		}
	}
	if peers == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	log := o.log()
	start := time.Now()
	log.Debug("doctor: probing the other hosts", "from", r.Dest, "targets", len(targets), "wait", ProbeWait)
	out, err := r.h.Run(ctx, probeArgv(ProbeWait, targets)...)
	if err != nil {
		r.Warnings = append(r.Warnings, "cannot probe the other hosts: "+firstLineOf(string(out)+"\n"+err.Error()))
		return
	}
	probes := parseProbes(string(out))
	for _, p := range probes {
		log.Debug("doctor: probe", "from", r.Dest, "to", p.Addr, "port", p.Port, "result", p.result(), "ms", p.Ms, "message", p.Msg)
	}
	log.Debug("doctor: probes done", "from", r.Dest, "answers", len(probes), "of", len(targets), "elapsed", time.Since(start).Round(time.Millisecond))
	bad := peerProblems(probes, len(targets))
	if len(bad) > 0 {
		r.Problems = append(r.Problems, bad...)
		for _, p := range probes {
			if !p.reachable() {
				r.ByHand = ProbeByHand(r.h.UserArgs(), r.Dest, p.Addr, p.Port)
				break
			}
		}
		return
	}
	r.Facts = append(r.Facts, fmt.Sprintf("reaches the other %d host(s) on %d ports", peers, len(o.Ports())))
}

// peerProbe is one line of probeScript's output: the target, the exit code (0 accepted,
// 1 refused or failed, 124 no answer in the wait), how long it took in ms (-1 unknown) and
// bash's message.
type peerProbe struct {
	Addr string
	Port int
	RC   int
	Ms   int
	Msg  string
}

// reachable: the port answered (a listener accepted, or the host refused it).
func (p peerProbe) reachable() bool { return p.RC == 0 || strings.Contains(p.Msg, "refused") }

// result is "open", "refused", "filtered" or "failed" for the debug log.
func (p peerProbe) result() string {
	switch {
	case p.RC == 0:
		return "open"
	case strings.Contains(p.Msg, "refused"):
		return "refused"
	case p.RC == 124:
		return "filtered"
	}
	return "failed"
}

// parseProbes reads probeScript's output, one probe per target in the order of their
// lines, each with the message of bash's line about it; a target listed twice (a probe
// that answered as the wait ended) keeps its answer, not the 124. Pure.
func parseProbes(out string) []peerProbe {
	var ps []peerProbe
	idx := map[string]int{}
	msgs := map[string]string{} // "ADDR PORT" -> bash's message
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if i := strings.Index(l, "/dev/tcp/"); strings.HasPrefix(l, "bash:") && i >= 0 {
			// bash: line 6: /dev/tcp/ADDR/PORT: MESSAGE
			target, msg, _ := strings.Cut(l[i+len("/dev/tcp/"):], ": ")
			if a, p, ok := strings.Cut(target, "/"); ok {
				msgs[a+" "+p] = strings.TrimSpace(msg)
			}
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		port, err1 := strconv.Atoi(f[1])
		rc, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		p := peerProbe{Addr: f[0], Port: port, RC: rc, Ms: -1}
		if len(f) > 3 {
			if ms, err := strconv.Atoi(f[3]); err == nil {
				p.Ms = ms
			}
		}
		k := f[0] + " " + f[1]
		if i, ok := idx[k]; ok {
			if ps[i].RC == 124 {
				ps[i] = p
			}
			continue
		}
		idx[k] = len(ps)
		ps = append(ps, p)
	}
	for i := range ps {
		if ps[i].RC == 1 {
			ps[i].Msg = msgs[ps[i].Addr+" "+strconv.Itoa(ps[i].Port)]
		}
	}
	return ps
}

// noRoute reports whether a failed connect's message (the C locale's strerror) means the
// packets have no way to the address: EHOSTUNREACH ("No route to host", an unreachable
// route or no ARP answer), ENETUNREACH ("Network is unreachable", no route at all) and
// EINVAL ("Invalid argument", which connect returns for a blackhole route). Pure.
func noRoute(msg string) bool {
	for _, m := range []string{"No route to host", "Network is unreachable", "Invalid argument"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// peerProblems turns the probes into one problem per peer and cause that a port could not
// be reached on, e.g. "to 198.18.1.12 port 4567,4568: filtered (no answer in 3 s)"; want
// is how many probes there must be. Pure.
func peerProblems(probes []peerProbe, want int) []string {
	type key struct{ addr, why string }
	ports := map[key][]int{}
	var order []key
	for _, p := range probes {
		if p.reachable() {
			continue // a listener, or reachable and free
		}
		why := p.Msg
		switch {
		case p.RC == 124:
			why = fmt.Sprintf("filtered (no answer in %d s)", int(ProbeWait/time.Second))
		case noRoute(p.Msg):
			why = "no route"
		default:
			if i := strings.LastIndex(why, ": "); i >= 0 {
				why = why[i+2:]
			}
		}
		k := key{p.Addr, why}
		if _, ok := ports[k]; !ok {
			order = append(order, k)
		}
		ports[k] = append(ports[k], p.Port)
	}
	var probs []string
	for _, k := range order {
		ps := ports[k]
		sort.Ints(ps)
		probs = append(probs, fmt.Sprintf("to %s port %s: %s", k.addr, joinInts(ps, ","), k.why))
	}
	if n := len(probes); n < want {
		probs = append(probs, fmt.Sprintf("%d of %d port probes to the other hosts gave no answer", want-n, want))
	}
	return probs
}
