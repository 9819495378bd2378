package cluster

import (
	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// ClientSSH returns the SSH access to a client host dest (a run's workload client, see
// package clients) with sp's options (nil: the user's ssh configuration): the cached
// *host.SSH the hosts provider uses, its files made absolute, under the test harness's
// network guard. Errors are *topology.FieldError on ssh.identity or ssh.config.
func ClientSSH(sp *topology.SSHSpec, dest string) (*host.SSH, error) {
	sp, err := absSSHSpec(sp)
	if err != nil {
		return nil, err
	}
	return sshHostFor(sp, dest), nil
}
