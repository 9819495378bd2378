package topology

// HAProxy is the proxy `proxy: haproxy`: Debian's haproxy (2.6 here) or the user's. Its
// ports, from the proxy member's: the write endpoint (to the writer: a group's PRIMARY,
// one Synced Galera node at a time, the async source), the read endpoint (round robin
// over the others), the statistics page (CSV, read every 100 ms during a run), and the
// health checks habench serves for it (one HTTP path per backend, see package proxy).
const HAProxy = "haproxy"

func init() {
	RegisterProxy(ProxyDef{
		Type:    HAProxy,
		Summary: "HAProxy in TCP mode: a write endpoint that follows the writer, a read endpoint over the others, health checks that know the topology",
		Program: HAProxy,
		Ports:   []string{"write", "read", "stats", "check"},
		Hosts:   true,
	})
}
