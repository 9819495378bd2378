package topology

import (
	"errors"
	"strings"
	"testing"
)

// The proxies that run the user's binary parse from YAML, are members with their ports,
// and refuse a spec without proxy.binary (and ProxySQL a check interval its monitor does
// not take) in one line naming the field.
func TestProxyUserBinarySpec(t *testing.T) {
	for _, tc := range []struct {
		typ   string
		ports int
	}{{ProxySQL, 3}, {MySQLRouter, 3}} {
		s, err := ParseSpecYAML([]byte("name: x\nkind: group\nflavor: mysql\nproxy: {type: " + tc.typ + ", binary: /opt/" + tc.typ + "/bin/" + tc.typ + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		aux := s.AuxNodes()
		if len(aux) != 1 || aux[0] != (AuxNode{Name: ProxyName, Role: RoleProxy, Program: tc.typ, Ports: tc.ports}) {
			t.Errorf("%s: aux members %+v, want the proxy with %d ports", tc.typ, aux, tc.ports)
		}
		if d := ProxyOf(tc.typ); d == nil || d.Ports[0] != "write" || d.Ports[1] != "read" || !strings.Contains(d.Untried, "not run on a real") {
			t.Errorf("%s: def %+v: want ports write, read first and an Untried note", tc.typ, d)
		}
		s, err = ParseSpecYAML([]byte("name: x\nkind: group\nflavor: mysql\nproxy: " + tc.typ + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "proxy.binary" || !strings.Contains(err.Error(), "required for proxy "+tc.typ) {
			t.Errorf("%s without a binary: %v, want proxy.binary required", tc.typ, err)
		}
	}
	s, err := ParseSpecYAML([]byte("name: x\nkind: galera\nflavor: mariadb\nproxy: {type: proxysql, binary: /usr/bin/proxysql, check_interval: 50ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || err.Error() != `proxy.check_interval "50ms": ProxySQL's monitor takes at least 100ms` {
		t.Errorf("proxysql at 50ms: %v", err)
	}
}
