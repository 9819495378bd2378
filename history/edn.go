package history

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ednEvent is one line of an EDN history: an operation's invocation or completion.
type ednEvent struct {
	time   int64
	invoke bool
	op     *Op
}

// WriteEDN writes ops in the history format Jepsen's Elle reads (elle.rw-register, or
// elle.list-append for a list-append history: [:append k v] and [:r k [1 2 3]]):
// one map per line, each operation as an :invoke at its Start and its completion at its
// End (:ok, :fail, or :info for an unknown outcome), ordered by time and numbered by
// :index from 0, e.g.
//
//	{:index 0, :time 1200, :type :invoke, :process 3, :f :txn, :value [[:r 1 nil] [:w 1 7]], :node "n1"}
//	{:index 1, :time 9800, :type :ok, :process 3, :f :txn, :value [[:r 1 4] [:w 1 7]], :node "n1"}
//
// :time is in nanoseconds since the history's start. Reads carry nil in the :invoke
// (and in :fail and :info, whose reads are not known to have happened); writes carry
// their value throughout, and so do appends. :node and :error (a string) are habench's own keys, which
// Elle ignores.
func WriteEDN(w io.Writer, ops []Op) error {
	ev := make([]ednEvent, 0, 2*len(ops))
	for i := range ops {
		ev = append(ev, ednEvent{ops[i].Start, true, &ops[i]}, ednEvent{ops[i].End, false, &ops[i]})
	}
	sort.SliceStable(ev, func(i, j int) bool {
		if ev[i].time != ev[j].time {
			return ev[i].time < ev[j].time
		}
		return ev[i].invoke && !ev[j].invoke
	})
	bw := bufio.NewWriter(w)
	var b strings.Builder
	for i, e := range ev {
		b.Reset()
		writeEDNEvent(&b, i, e)
		if _, err := bw.WriteString(b.String()); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func writeEDNEvent(b *strings.Builder, index int, e ednEvent) {
	typ := ":invoke"
	full := false
	if !e.invoke {
		switch e.op.Outcome {
		case OK:
			typ, full = ":ok", true
		case Fail:
			typ = ":fail"
		default:
			typ = ":info"
		}
	}
	b.WriteString("{:index ")
	b.WriteString(strconv.Itoa(index))
	b.WriteString(", :time ")
	b.WriteString(strconv.FormatInt(e.time, 10))
	b.WriteString(", :type ")
	b.WriteString(typ)
	b.WriteString(", :process ")
	b.WriteString(strconv.Itoa(e.op.Process))
	b.WriteString(", :f :txn, :value [")
	for j, m := range e.op.Value {
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("[:")
		b.WriteString(m.F)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(m.Key, 10))
		b.WriteByte(' ')
		if m.F == "r" && m.List != nil && full {
			writeEDNList(b, m.List)
		} else if m.Value != nil && (m.F != "r" || full) {
			b.WriteString(strconv.FormatInt(*m.Value, 10))
		} else {
			b.WriteString("nil")
		}
		b.WriteByte(']')
	}
	b.WriteString("], :node ")
	b.WriteString(ednString(e.op.Node))
	if !e.invoke && e.op.Error != "" {
		b.WriteString(", :error ")
		b.WriteString(ednString(e.op.Error))
	}
	b.WriteString("}\n")
}

// writeEDNList writes l as an EDN vector, e.g. [1 2 3].
func writeEDNList(b *strings.Builder, l []int64) {
	b.WriteByte('[')
	for i, x := range l {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	b.WriteByte(']')
}

// ednString quotes s as an EDN string (escapes \, ", newline, return and tab).
func ednString(s string) string { return `"` + ednEscaper.Replace(s) + `"` }

var ednEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
