package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
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

// probeScript tries a TCP connection to every "ADDR PORT" argument at once, 2 s each, and
// prints "ADDR PORT EXIT MESSAGE" per target (EXIT 124: timeout). A target that timed out
// is tried once more: on a busy host the dozens of shells started at once can take most
// of the 2 s before they connect (seen as a false "filtered" under a full test run); a
// filtered port times out twice.
const probeScript = `command -v bash >/dev/null && command -v timeout >/dev/null || { echo "no bash or timeout"; exit 3; }
for t in "$@"; do
  ( a=${t% *}; p=${t#* }
    m=$(timeout 2 bash -c "exec 3<>/dev/tcp/$a/$p" 2>&1); rc=$?
    if [ "$rc" = 124 ]; then m=$(timeout 2 bash -c "exec 3<>/dev/tcp/$a/$p" 2>&1); rc=$?; fi
    echo "$a $p $rc $(echo "$m" | tail -n 1)" ) &
done; wait`

// checkPeers tries, from r's host, every port of every other connected host: a listener
// or "connection refused" is reachable; no answer in 2 s (filtered) or no route is a
// problem, since the cluster's members must reach each other on those ports.
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
	out, err := r.h.Run(ctx, append([]string{"sh", "-c", probeScript, "sh"}, targets...)...)
	if err != nil {
		r.Warnings = append(r.Warnings, "cannot probe the other hosts: "+firstLineOf(string(out)+"\n"+err.Error()))
		return
	}
	bad := peerProblems(string(out), len(targets))
	if len(bad) > 0 {
		r.Problems = append(r.Problems, bad...)
		return
	}
	r.Facts = append(r.Facts, fmt.Sprintf("reaches the other %d host(s) on %d ports", peers, len(o.Ports())))
}

// peerProblems turns probeScript's output into one problem per peer that a port could not
// be reached on, e.g. "198.18.1.12 port 4567, 4568 filtered (no answer in 2 s)"; want is
// how many lines there must be. Pure.
func peerProblems(out string, want int) []string {
	type key struct{ addr, why string }
	ports := map[key][]int{}
	var order []key
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 {
			continue
		}
		n++
		port, _ := strconv.Atoi(f[1])
		msg := ""
		if len(f) == 4 {
			msg = f[3]
		}
		why := ""
		switch {
		case f[2] == "0", strings.Contains(msg, "refused"):
			continue // a listener, or reachable and free
		case f[2] == "124":
			why = "filtered (no answer in 2 s)"
		case strings.Contains(msg, "No route"):
			why = "no route"
		default:
			why = msg
			if i := strings.LastIndex(why, ": "); i >= 0 {
				why = why[i+2:]
			}
		}
		k := key{f[0], why}
		if _, ok := ports[k]; !ok {
			order = append(order, k)
		}
		ports[k] = append(ports[k], port)
	}
	var probs []string
	for _, k := range order {
		ps := ports[k]
		sort.Ints(ps)
		probs = append(probs, fmt.Sprintf("to %s port %s: %s", k.addr, joinInts(ps, ","), k.why))
	}
	if n < want {
		probs = append(probs, fmt.Sprintf("%d of %d port probes to the other hosts gave no answer", want-n, want))
	}
	return probs
}
