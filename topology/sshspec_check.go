package topology

// Check checks the SSH fields on their own (user, port, identity, options, hosts' syntax),
// for commands that take them as flags without a topology (habench doctor --hosts); errors
// are *FieldError on "ssh.FIELD". A nil spec is valid.
func (s *SSHSpec) Check() error { return s.validate(0) }
