package netem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"
)

// blockedAfter is how many failed first handshakes make MeasureRTT call a link blocked.
const blockedAfter = 3

// LinkRTT is the round trip measured from one node to another next to what was asked for.
// Round trip From->To->From; the requested value is Delay(From->To) + Delay(To->From),
// i.e. the sum of the two ONE-WAY delays (jitter and rate not included).
type LinkRTT struct {
	Link      Link
	Requested time.Duration // round trip the spec asks for
	Median    time.Duration // achieved round trip, median of the successful samples
	P99       time.Duration // achieved round trip, 99th percentile (the maximum below 100 samples)
	Min       time.Duration
	Samples   int // successful TCP handshakes
	Failed    int // handshakes that did not complete within the timeout (loss, partition)
}

// MeasureRTT measures the achieved round trip of every directed pair of eps: from a socket
// in From's namespace it opens `samples` TCP connections to a listener on To's address
// inside To's namespace and times each handshake (SYN From->To, SYN-ACK To->From: one
// round trip). Each handshake waits at most timeout; a link whose first 3 handshakes
// all fail is reported blocked (Samples 0, Failed 3) without further tries. spec (nil: none)
// gives Requested and shapes the probing (probePlan): a cut pair gets 3 short tries, a slow
// or lossy one fewer, longer ones.
// It sends traffic only to the endpoints' own addresses. Errors: a namespace or listener
// that cannot be set up, or ctx ending.
func MeasureRTT(ctx context.Context, eps []Endpoint, spec *Spec, samples int, timeout time.Duration) ([]LinkRTT, error) {
	if samples < 1 {
		return nil, fmt.Errorf("samples %d: want at least 1", samples)
	}
	addrs := make([]string, len(eps))
	for i, e := range eps {
		var ln net.Listener
		err := InNetns(e.Netns, func() error {
			var err error
			ln, err = net.Listen("tcp4", net.JoinHostPort(e.Addr.String(), "0"))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("listen in %s: %w", e.Name, err)
		}
		defer ln.Close()
		addrs[i] = net.JoinHostPort(e.Addr.String(), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	var out []LinkRTT
	for i, a := range eps {
		for j, b := range eps {
			if i == j {
				continue
			}
			r := LinkRTT{Link: Link{a.Name, b.Name}}
			if spec != nil {
				r.Requested = spec.RequestedRTT(a.Name, b.Name)
			}
			var rtts []time.Duration
			n, to := probePlan(spec, a.Name, b.Name, samples, timeout)
			err := InNetns(a.Netns, func() error {
				for k := 0; k < n; k++ {
					if err := ctx.Err(); err != nil {
						return err
					}
					d := net.Dialer{Timeout: to}
					t0 := time.Now()
					c, err := d.DialContext(ctx, "tcp4", addrs[j])
					el := time.Since(t0)
					if err != nil {
						if ctx.Err() != nil {
							return ctx.Err()
						}
						r.Failed++
						if r.Failed == blockedAfter && len(rtts) == 0 {
							break // blocked: partition or 100% loss
						}
						continue
					}
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetLinger(0) // RST: no TIME_WAIT pile-up
					}
					c.Close()
					rtts = append(rtts, el)
				}
				return nil
			})
			if err != nil {
				return out, fmt.Errorf("measure %s: %w", r.Link, err)
			}
			if len(rtts) > 0 {
				slices.Sort(rtts)
				r.Samples = len(rtts)
				r.Min = rtts[0]
				r.Median = rtts[len(rtts)/2]
				r.P99 = rtts[min(len(rtts)-1, len(rtts)*99/100)]
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("fewer than two endpoints: no link to measure")
	}
	return out, nil
}

// probePlan returns how many handshakes to try on the pair a, b and how long each may
// take, given the spec (nil: none):
//   - cut (partition or 100% loss either way): 3 tries of at most 300 ms, to prove it;
//   - otherwise each try may take the requested round trip plus twice both jitters plus
//     timeout, and the tries are capped so a pair takes about 5 s of round trips (at least 3);
//   - lossy (loss either way): at most 5 tries, since a lost SYN costs a 1 s retransmission.
func probePlan(spec *Spec, a, b string, samples int, timeout time.Duration) (int, time.Duration) {
	if spec == nil {
		return samples, timeout
	}
	if spec.Cut(a, b) {
		return blockedAfter, min(timeout, 300*time.Millisecond)
	}
	ab, ba := spec.Get(a, b), spec.Get(b, a)
	rtt := ab.Delay + ba.Delay + 2*(ab.Jitter+ba.Jitter)
	n, to := samples, timeout+rtt
	if rtt > 0 {
		n = min(n, max(blockedAfter, int(5*time.Second/rtt)))
	}
	if ab.Loss > 0 || ba.Loss > 0 {
		n = min(n, 5)
	}
	return n, to
}

// Backend is an applied set of impairments: kernel qdiscs (*Kernel) or the userspace link
// (*Userspace). Update replaces the impairments; Close removes everything and must run on
// every path, including errors and signals.
type Backend interface {
	Update(spec *Spec) error
	Close() error
}

// Backend names, as Apply reports them.
const (
	BackendKernel    = "kernel"
	BackendUserspace = "userspace"
)

// Apply attaches spec to eps with kernel netem where the kernel has it (KernelAvailable)
// and the userspace link otherwise, then measures the achieved round trip of every
// directed pair (samples handshakes each, at most timeout per handshake) so the caller can
// store requested against achieved. It returns the backend, its name and the
// measurements; on error nothing is left applied.
func Apply(ctx context.Context, eps []Endpoint, spec *Spec, samples int, timeout time.Duration) (Backend, string, []LinkRTT, error) {
	var b Backend
	name := BackendKernel
	if KernelAvailable() == nil {
		k, err := NewKernel(eps, spec)
		if err != nil {
			return nil, name, nil, err
		}
		b = k
	} else {
		name = BackendUserspace
		u, err := NewUserspace(eps, spec)
		if err != nil {
			return nil, name, nil, err
		}
		b = u
	}
	rtts, err := MeasureRTT(ctx, eps, spec, samples, timeout)
	if u, ok := b.(*Userspace); ok && err == nil {
		err = u.Err()
	}
	if err != nil {
		b.Close()
		return nil, name, nil, fmt.Errorf("measure after apply (%s): %w", name, err)
	}
	return b, name, rtts, nil
}

// ApplyUserspace is Apply forced to the userspace link.
func ApplyUserspace(ctx context.Context, eps []Endpoint, spec *Spec, samples int, timeout time.Duration) (*Userspace, []LinkRTT, error) {
	u, err := NewUserspace(eps, spec)
	if err != nil {
		return nil, nil, err
	}
	rtts, err := MeasureRTT(ctx, eps, spec, samples, timeout)
	if err == nil {
		err = u.Err()
	}
	if err != nil {
		u.Close()
		return nil, nil, fmt.Errorf("measure after apply: %w", err)
	}
	return u, rtts, nil
}
