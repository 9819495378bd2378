package cluster_test

import (
	"testing"

	"github.com/habench/habench/internal/testenv"
)

// TestMain runs the package's tests and then ends the SSH masters its hosts-provider tests
// opened in this process (testenv.MainWithShared), so no /tmp/hbssh-* directory is left.
func TestMain(m *testing.M) { testenv.MainWithShared(m) }
