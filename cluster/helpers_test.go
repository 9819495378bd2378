package cluster_test

import (
	"errors"
	"net"
	"testing"

	"github.com/habench/habench/topology"
)

func listen(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, ln.Addr().(*net.TCPAddr).Port
}

func asFieldError(err error, fe **topology.FieldError) bool { return errors.As(err, fe) }
