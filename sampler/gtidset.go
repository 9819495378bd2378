package sampler

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// GTIDInterval is an inclusive range of transaction numbers, Start <= End, Start >= 1.
type GTIDInterval struct{ Start, End uint64 }

// GTIDSet is a MySQL GTID set: for each source id, a sorted list of disjoint, non-adjacent
// intervals. The key is the lower-case server UUID, or "uuid:tag" for tagged GTIDs
// (MySQL >= 8.3). The zero value (nil) is the empty set. Build one with ParseGTIDSet.
type GTIDSet map[string][]GTIDInterval

var (
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	tagRE  = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,31}$`)
)

// maxGNO is the largest transaction number MySQL allows (2^63-1).
const maxGNO = 1<<63 - 1

// ParseGTIDSet parses a MySQL GTID set as printed by @@GLOBAL.gtid_executed:
//
//	""                                                 the empty set
//	3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9       one UUID, two intervals
//	uuid1:1-5,\nuuid2:1-3                              several UUIDs (comma, optional whitespace)
//	uuid:1-5:tag_a:1-3:tag_b:7                         tagged GTIDs (MySQL >= 8.3): intervals after
//	                                                   a tag belong to that tag
//
// UUIDs and tags are case-insensitive; a UUID may repeat; overlapping or adjacent intervals
// are merged. Error on a malformed UUID, tag or interval (0, end < start, > 2^63-1), or a
// UUID or tag with no interval.
func ParseGTIDSet(s string) (GTIDSet, error) {
	set := GTIDSet{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		toks := strings.Split(part, ":")
		uuid := strings.ToLower(strings.TrimSpace(toks[0]))
		if !uuidRE.MatchString(uuid) {
			return nil, fmt.Errorf("gtid set %q: bad uuid %q", s, toks[0])
		}
		key, intervals := uuid, 0
		for _, tok := range toks[1:] {
			tok = strings.ToLower(strings.TrimSpace(tok))
			if tok != "" && (tok[0] < '0' || tok[0] > '9') {
				if !tagRE.MatchString(tok) {
					return nil, fmt.Errorf("gtid set %q: bad tag %q", s, tok)
				}
				if key != uuid && intervals == 0 {
					return nil, fmt.Errorf("gtid set %q: tag %q has no interval", s, key[len(uuid)+1:])
				}
				key, intervals = uuid+":"+tok, 0
				continue
			}
			iv, err := parseInterval(tok)
			if err != nil {
				return nil, fmt.Errorf("gtid set %q: %w", s, err)
			}
			set[key] = append(set[key], iv)
			intervals++
		}
		if intervals == 0 {
			return nil, fmt.Errorf("gtid set %q: %q has no interval", s, key)
		}
	}
	for k, ivs := range set {
		set[k] = normalize(ivs)
	}
	return set, nil
}

func parseInterval(tok string) (GTIDInterval, error) {
	a, b, isRange := strings.Cut(tok, "-")
	start, err := strconv.ParseUint(a, 10, 64)
	if err != nil || start == 0 || start > maxGNO {
		return GTIDInterval{}, fmt.Errorf("bad interval %q", tok)
	}
	end := start
	if isRange {
		end, err = strconv.ParseUint(b, 10, 64)
		if err != nil || end < start || end > maxGNO {
			return GTIDInterval{}, fmt.Errorf("bad interval %q", tok)
		}
	}
	return GTIDInterval{start, end}, nil
}

// normalize sorts and merges overlapping and adjacent intervals.
func normalize(ivs []GTIDInterval) []GTIDInterval {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].Start < ivs[j].Start })
	out := ivs[:0]
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// Count returns the number of transactions in the set.
func (s GTIDSet) Count() uint64 {
	var n uint64
	for _, ivs := range s {
		for _, iv := range ivs {
			n += iv.End - iv.Start + 1
		}
	}
	return n
}

// Subtract returns the transactions in s that are not in o (s and o are not modified).
func (s GTIDSet) Subtract(o GTIDSet) GTIDSet {
	out := GTIDSet{}
	for k, a := range s {
		if d := subtractIntervals(a, o[k]); len(d) > 0 {
			out[k] = d
		}
	}
	return out
}

// subtractIntervals computes a \ b for sorted, merged interval lists.
func subtractIntervals(a, b []GTIDInterval) []GTIDInterval {
	var out []GTIDInterval
	j := 0
	for _, iv := range a {
		cur := iv.Start
		for j < len(b) && b[j].End < cur {
			j++
		}
		for k := j; k < len(b) && b[k].Start <= iv.End; k++ {
			if b[k].Start > cur {
				out = append(out, GTIDInterval{cur, b[k].Start - 1})
			}
			if b[k].End >= iv.End {
				cur = iv.End + 1
				break
			}
			cur = b[k].End + 1
		}
		if cur <= iv.End {
			out = append(out, GTIDInterval{cur, iv.End})
		}
	}
	return out
}

// String renders the set canonically: UUIDs sorted, untagged intervals before tags (sorted),
// sets joined by ",": "uuid1:1-5:7:tag:1-3,uuid2:1". The empty set is "".
func (s GTIDSet) String() string {
	keys := make([]string, 0, len(s))
	for k, ivs := range s {
		if len(ivs) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // "uuid" sorts before "uuid:tag"
	var b strings.Builder
	prevUUID := ""
	for _, k := range keys {
		uuid, tag, _ := strings.Cut(k, ":")
		if uuid != prevUUID {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(uuid)
			prevUUID = uuid
		}
		if tag != "" {
			b.WriteString(":" + tag)
		}
		for _, iv := range s[k] {
			if iv.Start == iv.End {
				fmt.Fprintf(&b, ":%d", iv.Start)
			} else {
				fmt.Fprintf(&b, ":%d-%d", iv.Start, iv.End)
			}
		}
	}
	return b.String()
}

// MariaDBGTID is one MariaDB GTID, domain-server-seqno.
type MariaDBGTID struct {
	Domain uint32
	Server uint32
	Seq    uint64
}

// MariaDBGTIDPos is a MariaDB GTID position (@@gtid_binlog_pos, @@gtid_slave_pos): the last
// GTID per replication domain, keyed by domain.
type MariaDBGTIDPos map[uint32]MariaDBGTID

// ParseMariaDBGTIDPos parses "0-1-100,1-2-50" (comma separated, whitespace allowed; "" is the
// empty position). Should a domain repeat, the higher seqno wins. Error on a malformed GTID.
func ParseMariaDBGTIDPos(s string) (MariaDBGTIDPos, error) {
	pos := MariaDBGTIDPos{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f := strings.Split(part, "-")
		if len(f) != 3 {
			return nil, fmt.Errorf("mariadb gtid %q: want domain-server-seqno", part)
		}
		d, err1 := strconv.ParseUint(f[0], 10, 32)
		sv, err2 := strconv.ParseUint(f[1], 10, 32)
		q, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("mariadb gtid %q: want numbers domain-server-seqno", part)
		}
		g := MariaDBGTID{uint32(d), uint32(sv), q}
		if old, ok := pos[g.Domain]; !ok || g.Seq > old.Seq {
			pos[g.Domain] = g
		}
	}
	return pos, nil
}

// MariaDBBacklog returns how many transactions source has that replica has not, summed over
// the source's domains: per domain max(0, source seqno - replica seqno), a domain missing on
// the replica counting as seqno 0. Seqnos are compared per domain whatever the server_id
// (after a failover the new source continues the domain's seqno under its own server_id).
// Assumes seqnos are dense within a domain, as with one writer per domain and
// gtid_strict_mode.
func MariaDBBacklog(source, replica MariaDBGTIDPos) uint64 {
	var n uint64
	for d, g := range source {
		if r := replica[d].Seq; g.Seq > r {
			n += g.Seq - r
		}
	}
	return n
}
