package netem

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

type packet struct {
	due      int64 // ns since Userspace.epoch
	seq      uint64
	gen      uint64 // Userspace.gen when queued
	from, to int
	b        []byte
}

// packetQueue is a min-heap on (due, seq), typed so that push and pop do not allocate.
type packetQueue []packet

func (h packetQueue) less(i, j int) bool {
	if h[i].due == h[j].due {
		return h[i].seq < h[j].seq
	}
	return h[i].due < h[j].due
}

func (h *packetQueue) push(p packet) {
	*h = append(*h, p)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *packetQueue) pop() packet {
	q := *h
	p := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = packet{}
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return p
}

// sampleDelay draws one packet's one-way delay.
func sampleDelay(imp Impairment) time.Duration {
	if imp.Jitter == 0 {
		return imp.Delay
	}
	var d float64
	if imp.Distribution == DistNormal {
		d = float64(imp.Delay) + rand.NormFloat64()*float64(imp.Jitter)
	} else {
		d = float64(imp.Delay) + (rand.Float64()*2-1)*float64(imp.Jitter)
	}
	return time.Duration(math.Max(d, 0))
}

// pull reads node i's device and forwards or queues each packet, timestamped right after
// its read, until the device is empty (full false) or it has read readBatch packets or
// the head of the queue is due (full true: there may be more). k is how many it read.
func (u *Userspace) pull(i int) (k int, full bool, err error) {
	for k < readBatch {
		m, err := unix.Read(u.fds[i], u.buf)
		now := u.now()
		switch err {
		case nil:
		case unix.EAGAIN:
			return k, false, nil
		case unix.EINTR:
			continue
		default:
			return k, false, err
		}
		k++
		u.ingest(i, u.buf[:m], now)
		if len(u.q) > 0 && u.q[0].due <= now {
			break
		}
	}
	return k, true, nil
}

// ingest applies the impairment of the directed link a packet from node i goes over:
// drop it, write it to its destination now, or queue it with its due time. now is when
// the packet was read.
func (u *Userspace) ingest(i int, pkt []byte, now int64) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return // not IPv4
	}
	j, ok := u.byIP[[4]byte(pkt[16:20])]
	if !ok || j == i {
		return
	}
	n := len(u.eps)
	c := &u.stats[i*n+j]
	tbl := u.table.Load()
	if tbl != u.seen {
		// After an Update, packets queued under the old impairments keep their due
		// times but no longer count against the new limits (as the rate backlog is capped).
		u.seen, u.gen = tbl, u.gen+1
		clear(u.inq)
	}
	imp := tbl.imp[i*n+j]
	if imp.Partition || (imp.Loss > 0 && rand.Float64() < imp.Loss) {
		c.drop.Add(1)
		return
	}
	if u.inq[i*n+j] >= queueLimitPackets {
		c.drop.Add(1)
		return
	}
	due := now
	if imp.Rate > 0 {
		busy := &u.busy[i*n+j]
		limit := int64(float64(queueLimitPackets*1500) / float64(imp.Rate) * 1e9)
		// A backlog left by a slower rate before an Update must not drop everything at
		// the new rate: it is capped at what the current rate can hold.
		*busy = min(*busy, now+limit)
		start := max(*busy, now)
		if start-now >= limit {
			c.drop.Add(1)
			return
		}
		*busy = start + int64(float64(len(pkt)+ethernetHeader)/float64(imp.Rate)*1e9)
		due = *busy
	}
	due += int64(sampleDelay(imp))
	if due <= now {
		if u.write(j, pkt) == nil {
			c.fwd.Add(1)
		} else {
			c.drop.Add(1)
		}
		return
	}
	var b []byte
	switch {
	case len(pkt) > pktBufSize:
		b = make([]byte, len(pkt))
	case len(u.free) > 0:
		b = u.free[len(u.free)-1]
		u.free = u.free[:len(u.free)-1]
	default:
		b = make([]byte, pktBufSize)
	}
	u.seq++
	u.inq[i*n+j]++
	u.q.push(packet{due: due, seq: u.seq, gen: u.gen, from: i, to: j, b: b[:copy(b[:cap(b)], pkt)]})
}

// write hands pkt to endpoint j: its TUN device, or the output seam (out) when set.
func (u *Userspace) write(j int, pkt []byte) error {
	if u.out != nil {
		return u.out(j, pkt)
	}
	_, err := unix.Write(u.fds[j], pkt)
	return err
}

// deliverDue writes every queued packet that is due.
func (u *Userspace) deliverDue() {
	n := len(u.eps)
	for len(u.q) > 0 {
		now := u.now()
		if u.q[0].due > now {
			return
		}
		p := u.q.pop()
		if p.gen == u.gen {
			u.inq[p.from*n+p.to]--
		}
		if u.write(p.to, p.b) == nil {
			u.stats[p.from*n+p.to].fwd.Add(1)
			u.late.record(time.Duration(now - p.due))
		} else {
			u.stats[p.from*n+p.to].drop.Add(1)
		}
		if cap(p.b) == pktBufSize && len(u.free) < queueLimitPackets {
			u.free = append(u.free, p.b)
		}
	}
}

// lateness accumulates how late delayed packets were delivered.
type lateness struct {
	sum, count, max atomic.Int64 // nanoseconds, packets, nanoseconds
}

func (l *lateness) record(d time.Duration) {
	l.sum.Add(int64(d))
	l.count.Add(1)
	for {
		m := l.max.Load()
		if int64(d) <= m || l.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}
