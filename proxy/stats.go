package proxy

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Server is one server row of HAProxy's statistics (its CSV; FRONTEND and BACKEND rows
// are left out).
type Server struct {
	// Backend is the listen section ("write", "read": pxname); Name the server ("n1": svname).
	Backend, Name string
	// Status is "UP", "DOWN", "MAINT", "NOLB", or a transition ("UP 1/3", "DOWN 1/2").
	Status string
	// Backup: a backup server (bck), used when no active one is up.
	Backup bool
	// Sessions are its current sessions (scur), TotalSessions every session since the
	// start (stot).
	Sessions, TotalSessions int
	// CheckFailures are its failed checks (chkfail), Downs its UP to DOWN transitions
	// (chkdown), since HAProxy started.
	CheckFailures, Downs int
	// LastChange is the seconds since its last status change (lastchg).
	LastChange int
	// CheckStatus and CheckCode are its last check's status ("L7OK", "L7STS") and HTTP
	// code (check_status, check_code); CheckDesc its text (check_desc, "" before 1.7).
	CheckStatus string
	CheckCode   int
	CheckDesc   string
}

// Up reports whether s is up (UP, or going down but not down yet: "UP 1/3").
func (s Server) Up() bool { return strings.HasPrefix(s.Status, "UP") }

// StatsURL is the CSV statistics' URL of a proxy whose stats endpoint is host:port.
func StatsURL(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + StatsPath + ";csv"
}

// ReadStats reads HAProxy's CSV statistics at url (StatsURL) with client and returns its
// server rows in the file's order. Error: the request fails, the status is not 200, or
// the body is not HAProxy's CSV (no "# pxname,svname" header).
func ReadStats(ctx context.Context, client *http.Client, url string) ([]Server, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("proxy stats %s: HTTP %s", url, resp.Status)
	}
	return ParseStats(resp.Body)
}

// ParseStats parses HAProxy's CSV statistics (the "# pxname,svname,..." header line,
// then one row per frontend, server and backend) into its server rows. Error: no such
// header, a malformed row.
func ParseStats(r io.Reader) ([]Server, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("proxy stats: %w", err)
	}
	if len(head) < 2 || strings.TrimSpace(strings.TrimPrefix(head[0], "#")) != "pxname" {
		return nil, fmt.Errorf("proxy stats: header %q: want HAProxy's CSV (# pxname,svname,...)", strings.Join(head[:min(len(head), 3)], ","))
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(strings.TrimPrefix(h, "#"))] = i
	}
	var out []Server
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("proxy stats: %w", err)
		}
		get := func(k string) string {
			if i, ok := col[k]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		num := func(k string) int { v, _ := strconv.Atoi(get(k)); return v }
		if get("svname") == "FRONTEND" || get("svname") == "BACKEND" || (get("type") != "" && get("type") != "2") {
			continue
		}
		out = append(out, Server{
			Backend: get("pxname"), Name: get("svname"), Status: get("status"), Backup: get("bck") == "1",
			Sessions: num("scur"), TotalSessions: num("stot"), CheckFailures: num("chkfail"), Downs: num("chkdown"),
			LastChange: num("lastchg"), CheckStatus: get("check_status"), CheckCode: num("check_code"), CheckDesc: get("check_desc"),
		})
	}
}

// Settled reports whether every server's check has run and none is between up and down
// ("UP 1/3": failed once, not yet fall times): at its start HAProxy counts every server
// up until its checks have failed Fall times.
func Settled(servers []Server) bool {
	for _, s := range servers {
		if s.CheckStatus == "" || strings.HasPrefix(s.CheckStatus, "INI") || strings.Contains(s.Status, "/") {
			return false
		}
	}
	return true
}

// Summary is the one line of a proxy's health from its stats: the write endpoint's
// server ("write n1": the up server HAProxy uses, an active one before a backup; "write
// none up"), then, when there is a read endpoint, its servers up ("read 2 up: n2, n3",
// "read none up").
func Summary(servers []Server) string {
	writer := WriteServer(servers)
	var hasRead bool
	var readers []string
	for _, s := range servers {
		if s.Backend == "read" {
			hasRead = true
			if s.Up() {
				readers = append(readers, s.Name)
			}
		}
	}
	line := "write none up"
	if writer != "" {
		line = "write " + writer
	}
	switch {
	case !hasRead:
	case len(readers) == 0:
		line += ", read none up"
	default:
		line += fmt.Sprintf(", read %d up: %s", len(readers), strings.Join(readers, ", "))
	}
	return line
}

// WriteServer is the server the write endpoint sends new connections to: its first up
// server that is not a backup, else its first up backup; "" when none is up.
func WriteServer(servers []Server) string {
	for _, backup := range []bool{false, true} {
		for _, s := range servers {
			if s.Backend == "write" && s.Up() && s.Backup == backup {
				return s.Name
			}
		}
	}
	return ""
}
