package netem

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/habench/habench/host"
)

// AgentEndpoint is a node whose host runs a link agent: the remote endpoint, and the
// directory on its host (the node directory, which destroy removes with every process
// under it) that the habench binary is copied to.
type AgentEndpoint struct {
	RemoteEndpoint
	Dir string
}

// AgentBinary is the name of the habench binary copied into AgentEndpoint.Dir.
const AgentBinary = "habench"

// HostAgents is a run's impairments applied by link agents on the nodes' hosts (one per
// host; netem.Backend). Create with StartHostAgents; Close stops the agents, which
// removes their TUN devices and routes.
type HostAgents struct {
	eps    []AgentEndpoint
	addr   []netip.Addr // each endpoint's IPv4 address
	agents []*hostAgent // one per distinct host, in endpoint order
}

type hostAgent struct {
	ep   int // the first endpoint on this host
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	name string
}

// AgentTun is the TUN device name of cluster's agents: "hbag" and 8 hex digits of its
// name, so two clusters on one host do not collide.
func AgentTun(cluster string) string {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return fmt.Sprintf("hbag%08x", h.Sum32())
}

// StartHostAgents copies the running habench binary to each endpoint's Dir (skipped when
// the same size and sha256 is there), starts `habench link-agent` over SSH on each
// distinct host, and applies spec. Every host must be reached over SSH (*host.SSH) and
// every address be IPv4. On error every agent started is stopped.
func StartHostAgents(ctx context.Context, cluster string, eps []AgentEndpoint, spec *Spec) (*HostAgents, error) {
	a := &HostAgents{eps: eps}
	for _, e := range eps {
		if _, ok := e.Host.(*host.SSH); !ok {
			return nil, fmt.Errorf("node %s: the link agent needs a host reached over SSH", e.Name)
		}
		as, err := resolveOn(ctx, e.Host, e.Addr)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", e.Name, err)
		}
		var v4 netip.Addr
		for _, x := range as {
			if x.Is4() {
				v4 = x
				break
			}
		}
		if !v4.IsValid() {
			return nil, fmt.Errorf("node %s: address %s has no IPv4 address (the link agent is IPv4 only)", e.Name, e.Addr)
		}
		a.addr = append(a.addr, v4)
	}
	seen := map[string]bool{}
	for i, e := range eps {
		if seen[e.Host.Name()] {
			continue
		}
		seen[e.Host.Name()] = true
		ag, err := a.start(ctx, i, AgentTun(cluster), spec)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("node %s (%s): link agent: %w", e.Name, e.Host.Name(), err)
		}
		a.agents = append(a.agents, ag)
	}
	return a, nil
}

// links returns the agent config links from endpoint i's host to every other address.
func (a *HostAgents) links(i int, spec *Spec) []AgentLink {
	var out []AgentLink
	done := map[netip.Addr]bool{a.addr[i]: true}
	for j, e := range a.eps {
		if done[a.addr[j]] {
			continue
		}
		done[a.addr[j]] = true
		out = append(out, AgentLink{Peer: a.addr[j].String(), Imp: spec.Get(a.eps[i].Name, e.Name)})
	}
	return out
}

func (a *HostAgents) start(ctx context.Context, i int, tun string, spec *Spec) (*hostAgent, error) {
	e := a.eps[i]
	h := e.Host.(*host.SSH)
	bin, err := installAgent(ctx, h, e.Dir)
	if err != nil {
		return nil, err
	}
	cmd, in, out, err := h.Session(ctx, "exec "+host.Quote([]string{bin, "link-agent"})+" 2>&1")
	if err != nil {
		return nil, err
	}
	ag := &hostAgent{ep: i, cmd: cmd, in: in, out: bufio.NewReader(out), name: h.Name()}
	cfg := AgentConfig{Self: a.addr[i].String(), Tun: tun, Links: a.links(i, spec)}
	if err := ag.send(cfg); err != nil {
		ag.stop()
		return nil, err
	}
	return ag, nil
}

// send writes one config line and waits (at most 30 s) for the agent's answer.
func (ag *hostAgent) send(cfg AgentConfig) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if _, err := ag.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to the agent: %w", err)
	}
	type reply struct {
		line string
		err  error
	}
	rc := make(chan reply, 1)
	go func() {
		l, err := ag.out.ReadString('\n')
		rc <- reply{strings.TrimSpace(l), err}
	}()
	select {
	case r := <-rc:
		if r.line == "ok" {
			return nil
		}
		if r.line != "" {
			return errors.New(strings.TrimPrefix(r.line, "error: "))
		}
		return fmt.Errorf("the agent ended: %v", r.err)
	case <-time.After(30 * time.Second):
		return errors.New("no answer from the agent in 30 s")
	}
}

// stop closes the agent's stdin (it removes its TUN and exits) and waits up to 10 s,
// then kills the ssh session.
func (ag *hostAgent) stop() {
	ag.in.Close()
	done := make(chan struct{})
	go func() { ag.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		ag.cmd.Process.Kill()
		<-done
	}
}

// Update implements Backend: every agent gets spec's impairments from its host (nil:
// none; the packets still pass the agents).
func (a *HostAgents) Update(spec *Spec) error {
	var errs []error
	for _, ag := range a.agents {
		if err := ag.send(AgentConfig{Links: a.links(ag.ep, spec)}); err != nil {
			errs = append(errs, fmt.Errorf("node %s (%s): link agent: %w", a.eps[ag.ep].Name, ag.name, err))
		}
	}
	return errors.Join(errs...)
}

// Close implements Backend: it stops every agent. Idempotent.
func (a *HostAgents) Close() error {
	for _, ag := range a.agents {
		ag.stop()
	}
	a.agents = nil
	return nil
}

// installAgent copies this habench binary to dir/habench on h unless the same size and
// sha256 is there, and returns the path.
func installAgent(ctx context.Context, h *host.SSH, dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("this habench binary: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("this habench binary: %w", err)
	}
	defer f.Close()
	sum := sha256.New()
	size, err := io.Copy(sum, f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", exe, err)
	}
	want := fmt.Sprintf("%d %s", size, hex.EncodeToString(sum.Sum(nil)))
	dst := path.Join(dir, AgentBinary)
	got, _ := h.Run(ctx, "sh", "-c", `[ -f "$1" ] && echo "$(stat -c %s "$1") $(sha256sum < "$1" | cut -d' ' -f1)"`, "check", dst)
	if strings.TrimSpace(string(got)) == want {
		return dst, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	tmp := dst + ".part"
	cmd, in, out, err := h.Session(ctx, "cat > "+host.Quote([]string{tmp})+" && chmod 755 "+host.Quote([]string{tmp})+" && mv -f "+host.Quote([]string{tmp, dst}))
	if err != nil {
		return "", err
	}
	go io.Copy(io.Discard, out)
	_, cerr := io.Copy(in, f)
	in.Close()
	if werr := cmd.Wait(); werr != nil || cerr != nil {
		return "", fmt.Errorf("copy habench to %s: %v", dst, errors.Join(cerr, werr))
	}
	return dst, nil
}
