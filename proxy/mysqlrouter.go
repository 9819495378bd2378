package proxy

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// RouterConfig is what RouterText writes mysqlrouter.conf from.
type RouterConfig struct {
	// Cluster names the cluster in the file's first line.
	Cluster string
	// Backends are the servers in the write route's order (first-available: the writer
	// at the start first); the read route is round-robin over all but the first.
	Backends []Backend
	// Write, Read and HTTP are the listen addresses ("host:port") of the write route, the
	// read route and the HTTP server of the REST API; Read "" has no read route.
	Write, Read, HTTP string
	// Dir is Router's runtime and data folder (an absolute path); its log goes to its
	// standard error.
	Dir string
	// PasswdFile is the REST API's password file (RouterPasswdLine's line), an absolute
	// path; its realm is RouterRealm.
	PasswdFile string
}

// RouterRealm is the name of the REST API's authentication realm and backend in
// habench's configuration (Router's rest_routing requires a realm).
const RouterRealm = "habench"

// RouterAPIBase is the path of Router's REST API, version 20190715.
const RouterAPIBase = "/api/20190715"

// RouterMaxConnectErrors is each route's max_connect_errors: Router blocks a client host
// after that many failed connections in a row, and a benchmark's clients through a
// failover fail more than Router's default of 100.
const RouterMaxConnectErrors = 1_000_000

// check validates c; an error is one line naming the field and its value.
func (c RouterConfig) check() error {
	if err := checkBackends(c.Backends); err != nil {
		return err
	}
	if c.Read != "" && len(c.Backends) < 2 {
		return fmt.Errorf("mysqlrouter read address %q: a read route needs 2 or more backends, have %d", c.Read, len(c.Backends))
	}
	for _, a := range []struct{ name, v string }{{"write", c.Write}, {"read", c.Read}, {"http", c.HTTP}} {
		if a.v == "" && a.name == "read" {
			continue
		}
		if err := checkListen(a.name, a.v); err != nil {
			return err
		}
	}
	for _, p := range []struct{ name, v string }{{"folder", c.Dir}, {"password file", c.PasswdFile}} {
		if !strings.HasPrefix(p.v, "/") || strings.ContainsAny(p.v, "\n\r") {
			return fmt.Errorf("mysqlrouter %s %q: want an absolute path on one line", p.name, p.v)
		}
	}
	return nil
}

// RouterText returns mysqlrouter.conf for c (Router's INI syntax): the folders, the log
// on standard error, a [routing:write] section (first-available over c.Backends in
// order), a [routing:read] section (round-robin over all but the first; none without
// c.Read), both classic protocol, and the REST API on c.HTTP (plain HTTP, basic
// authentication against c.PasswdFile) with rest_routing. Error: a field of c that cannot
// go in the file (one line naming it and its value).
func RouterText(c RouterConfig) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# habench: MySQL Router for cluster %s (static routing), written by habench; untried on a real MySQL Router here.\n", c.Cluster)
	b.WriteString("# Static routes do not follow an election: first-available moves on only when a node refuses connections.\n")
	fmt.Fprintf(&b, "[DEFAULT]\nlogging_folder=\nruntime_folder=%s\ndata_folder=%s\n\n[logger]\nlevel=INFO\n", c.Dir, c.Dir)
	route(&b, "write", c.Write, "first-available", c.Backends)
	if c.Read != "" {
		route(&b, "read", c.Read, "round-robin", c.Backends[1:])
	}
	host, port, _ := net.SplitHostPort(c.HTTP)
	fmt.Fprintf(&b, "\n[http_server]\nbind_address=%s\nport=%s\nssl=0\n", host, port)
	fmt.Fprintf(&b, "\n[http_auth_realm:%s]\nbackend=%s\nmethod=basic\nname=%s\n", RouterRealm, RouterRealm, RouterRealm)
	fmt.Fprintf(&b, "\n[http_auth_backend:%s]\nbackend=file\nfilename=%s\n", RouterRealm, c.PasswdFile)
	fmt.Fprintf(&b, "\n[rest_api]\n\n[rest_routing]\nrequire_realm=%s\n", RouterRealm)
	return b.String(), nil
}

// route writes one [routing:NAME] section.
func route(b *strings.Builder, name, bind, strategy string, backends []Backend) {
	host, port, _ := net.SplitHostPort(bind)
	dests := make([]string, len(backends))
	for i, s := range backends {
		dests[i] = s.Addr()
	}
	fmt.Fprintf(b, "\n[routing:%s]\nbind_address=%s\nbind_port=%s\ndestinations=%s\nrouting_strategy=%s\nprotocol=classic\n",
		name, host, port, strings.Join(dests, ","), strategy)
	fmt.Fprintf(b, "connect_timeout=%d\nmax_connect_errors=%d\n", int(max(1, ConnectTimeout.Seconds())), RouterMaxConnectErrors)
}

// RouterPasswdLine is the password file's line for user (what `mysqlrouter_passwd set`
// writes): "user:" and password's SHA-256 crypt ("$5$salt$hash", 5000 rounds), which
// Router's file backend verifies. salt is 1 to 16 characters of ./0-9A-Za-z (crypt's
// alphabet). Error: a user with ':' or a newline, a salt outside that.
func RouterPasswdLine(user, password, salt string) (string, error) {
	if user == "" || strings.ContainsAny(user, ":\n\r") {
		return "", fmt.Errorf("mysqlrouter REST user %q: want a name without ':' or a newline", user)
	}
	if len(salt) < 1 || len(salt) > 16 || strings.Trim(salt, cryptAlphabet) != "" {
		return "", fmt.Errorf("mysqlrouter REST salt %q: want 1 to 16 of ./0-9A-Za-z", salt)
	}
	return user + ":" + sha256Crypt(password, salt) + "\n", nil
}

// cryptAlphabet is crypt(3)'s base-64 alphabet.
const cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// sha256Crypt is SHA-256 crypt of password with salt at the default 5000 rounds
// ("$5$salt$hash"), as Ulrich Drepper's specification "Unix crypt using SHA-256 and
// SHA-512" defines it.
func sha256Crypt(password, salt string) string {
	const rounds = 5000
	p, s := []byte(password), []byte(salt)
	alt := sha256.Sum256(append(append(append([]byte{}, p...), s...), p...))
	a := sha256.New()
	a.Write(p)
	a.Write(s)
	for i := len(p); i > 0; i -= 32 {
		a.Write(alt[:min(i, 32)])
	}
	for i := len(p); i > 0; i >>= 1 {
		if i&1 != 0 {
			a.Write(alt[:])
		} else {
			a.Write(p)
		}
	}
	c := a.Sum(nil)
	dp := sha256.New()
	for range p {
		dp.Write(p)
	}
	pSeq := repeatTo(dp.Sum(nil), len(p))
	ds := sha256.New()
	for i := 0; i < 16+int(c[0]); i++ {
		ds.Write(s)
	}
	sSeq := repeatTo(ds.Sum(nil), len(s))
	for r := 0; r < rounds; r++ {
		h := sha256.New()
		if r&1 != 0 {
			h.Write(pSeq)
		} else {
			h.Write(c)
		}
		if r%3 != 0 {
			h.Write(sSeq)
		}
		if r%7 != 0 {
			h.Write(pSeq)
		}
		if r&1 != 0 {
			h.Write(c)
		} else {
			h.Write(pSeq)
		}
		c = h.Sum(nil)
	}
	var out strings.Builder
	out.WriteString("$5$" + salt + "$")
	for _, g := range [][3]int{{0, 10, 20}, {21, 1, 11}, {12, 22, 2}, {3, 13, 23}, {24, 4, 14}, {15, 25, 5}, {6, 16, 26}, {27, 7, 17}, {18, 28, 8}, {9, 19, 29}} {
		b64From24(&out, c[g[0]], c[g[1]], c[g[2]], 4)
	}
	b64From24(&out, 0, c[31], c[30], 3)
	return out.String()
}

// repeatTo is d repeated to n bytes.
func repeatTo(d []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, d[:min(len(d), n-len(out))]...)
	}
	return out
}

// b64From24 writes n characters of crypt's base 64 of the 24 bits b2 b1 b0, low first.
func b64From24(out *strings.Builder, b2, b1, b0 byte, n int) {
	w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
	for ; n > 0; n-- {
		out.WriteByte(cryptAlphabet[w&0x3f])
		w >>= 6
	}
}

// RouterDestination is one item of GET RouterAPIBase/routes/NAME/destinations.
type RouterDestination struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
}

// RouterConnection is one item of GET RouterAPIBase/routes/NAME/connections (the field
// habench reads: the server's "host:port").
type RouterConnection struct {
	DestinationAddress string `json:"destinationAddress"`
}

// ParseRouterItems decodes a REST API answer of Router's shape {"items": [...]} into out
// (a *[]RouterDestination or *[]RouterConnection). Error: not JSON of that shape.
func ParseRouterItems[T RouterDestination | RouterConnection](r io.Reader, out *[]T) error {
	var doc struct {
		Items *[]T `json:"items"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return fmt.Errorf("mysqlrouter REST answer: %w", err)
	}
	if doc.Items == nil {
		return fmt.Errorf("mysqlrouter REST answer: no \"items\"")
	}
	*out = *doc.Items
	return nil
}

// RouterServers maps a route's destinations and connections (Router's REST API) to the
// proxy's servers of endpoint route ("write", "read"): one row per destination, in the
// route's order, named after the backend at that address ("host:port" when none is),
// Sessions its connections now. Router tells no destination's health for a static route,
// so every destination is "UP" (CheckStatus "UNKNOWN"); on the write route the
// destination with the most connections (the first on a tie or with none) is the one in
// use, the others are backups, as first-available tries them in order.
func RouterServers(route string, dests []RouterDestination, conns []RouterConnection, backends []Backend) []Server {
	names := map[string]string{}
	for _, b := range backends {
		names[b.Addr()] = b.Name
	}
	sessions := map[string]int{}
	for _, c := range conns {
		sessions[c.DestinationAddress]++
	}
	out := make([]Server, 0, len(dests))
	used := 0
	for i, d := range dests {
		addr := net.JoinHostPort(d.Address, strconv.Itoa(d.Port))
		name := names[addr]
		if name == "" {
			name = addr
		}
		out = append(out, Server{Backend: route, Name: name, Status: "UP", Sessions: sessions[addr], CheckStatus: "UNKNOWN",
			CheckDesc: "Router tells no destination's health for a static route"})
		if out[i].Sessions > out[used].Sessions {
			used = i
		}
	}
	if route == "write" {
		for i := range out {
			out[i].Backup = i != used
		}
	}
	return out
}
