package experiment

import (
	"strings"
	"testing"
)

func TestRedactArgsAndText(t *testing.T) {
	got := strings.Join(RedactArgs([]string{"habench", "sysbench", "oltp_read_write", "run", "--mysql-password", "s3cret",
		"--mysql-password=s3cret", "--mysql-user", "sb", "--dsn", "app:s3cret@tcp(10.0.0.1:3306)/", "--threads", "8"}), " ")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "--mysql-password *** --mysql-password=*** --mysql-user sb --dsn app:***@tcp(10.0.0.1:3306)/ --threads 8") {
		t.Errorf("RedactArgs: %s", got)
	}
	yaml := "topologies:\n  - name: ex\n    provider: existing\n    dsns: ['u:pa:ss@tcp(db1:3306)/', \"u:x@unix(/run/m.sock)/\"]\n    password: hunter2\n" +
		"    ssh: {user: dba, password: hunter3, port: 22}\n"
	red := RedactText(yaml)
	for _, secret := range []string{"pa:ss", "u:x@", "hunter2", "hunter3"} {
		if strings.Contains(red, secret) {
			t.Errorf("RedactText left %q:\n%s", secret, red)
		}
	}
	for _, keep := range []string{"u:***@tcp(db1:3306)/", "u:***@unix(/run/m.sock)/", `password: "***"`, "user: dba", "port: 22"} {
		if !strings.Contains(red, keep) {
			t.Errorf("RedactText lost %q:\n%s", keep, red)
		}
	}
	if s := "time: 10:30, host: db1:3306"; RedactText(s) != s {
		t.Errorf("RedactText changed text without secrets: %q", RedactText(s))
	}
}
