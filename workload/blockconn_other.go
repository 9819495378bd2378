//go:build !linux

package workload

import "net"

// blocking returns c unchanged: the blocking-socket conn (blockconn_linux.go)
// is Linux-only; elsewhere the runtime's netpoller serves the driver.
func blocking(c net.Conn) net.Conn { return c }
