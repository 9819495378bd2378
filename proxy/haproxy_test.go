package proxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testConfig() HAProxyConfig {
	return HAProxyConfig{
		Cluster:       "t1",
		Backends:      []Backend{{"n1", "10.233.7.11", 3306}, {"n2", "10.233.7.12", 3306}, {"n3", "10.233.7.13", 3306}},
		CheckInterval: 200 * time.Millisecond, Fall: 3, Rise: 2,
		Write: "10.233.7.14:3306", Read: "10.233.7.14:3307", Stats: "10.233.7.14:3308", Check: "127.0.0.1:3309",
	}
}

// section returns the lines of the listen section called name, "" when there is none.
func section(text, name string) string {
	i := strings.Index(text, "\nlisten "+name+"\n")
	if i < 0 {
		return ""
	}
	s := text[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestHAProxyText checks the generated configuration: the write endpoint has n1 active
// and the others backup with per-server /write/ checks against the check server, the
// read endpoint round robin with /read/ checks, the stats page, the timeouts; and that
// HAProxy itself accepts it when it is installed.
func TestHAProxyText(t *testing.T) {
	text, err := HAProxyText(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	w := section(text, "write")
	for _, want := range []string{
		"bind 10.233.7.14:3306", "balance first", "option httpchk",
		"http-check send meth GET uri-lf /write/%[srv_name]", "http-check expect status 200",
		"default-server check addr 127.0.0.1 port 3309 inter 200ms fall 3 rise 2 on-marked-down shutdown-sessions",
		"server n1 10.233.7.11:3306\n", "server n2 10.233.7.12:3306 backup\n", "server n3 10.233.7.13:3306 backup",
	} {
		if !strings.Contains(w+"\n", want) {
			t.Errorf("write section lacks %q:\n%s", want, w)
		}
	}
	r := section(text, "read")
	for _, want := range []string{"bind 10.233.7.14:3307", "balance roundrobin", "uri-lf /read/%[srv_name]", "server n1 10.233.7.11:3306\n", "server n3 10.233.7.13:3306"} {
		if !strings.Contains(r+"\n", want) {
			t.Errorf("read section lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r, "backup") {
		t.Errorf("read section has backups:\n%s", r)
	}
	st := section(text, "stats")
	for _, want := range []string{"bind 10.233.7.14:3308", "mode http", "stats uri /stats"} {
		if !strings.Contains(st, want) {
			t.Errorf("stats section lacks %q:\n%s", want, st)
		}
	}
	if strings.Contains(text, "stats refresh") {
		t.Error("stats refresh set")
	}
	for _, want := range []string{"mode tcp", "timeout connect 2s", "timeout client 1h", "timeout server 1h", "timeout check 1500ms"} {
		if !strings.Contains(text, "    "+want+"\n") {
			t.Errorf("defaults lack %q", want)
		}
	}

	c := testConfig()
	c.Read = ""
	noread, err := HAProxyText(c)
	if err != nil {
		t.Fatal(err)
	}
	if section(noread, "read") != "" || section(noread, "write") == "" {
		t.Errorf("without Read: a read section, or no write section:\n%s", noread)
	}

	// HAProxy accepts it (the check only parses: nothing is bound).
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Log("no haproxy on PATH: its check of the file skipped")
		return
	}
	for name, txt := range map[string]string{"read": text, "noread": noread} {
		p := filepath.Join(t.TempDir(), name+".cfg")
		if err := os.WriteFile(p, []byte(txt), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "-c", "-f", p).CombinedOutput(); err != nil {
			t.Errorf("haproxy -c -f %s: %v\n%s\n%s", name, err, out, txt)
		}
	}
}

// TestHAProxyTextRefuses: what cannot go in the file is refused naming the field.
func TestHAProxyTextRefuses(t *testing.T) {
	for _, tc := range []struct {
		edit func(*HAProxyConfig)
		want string
	}{
		{func(c *HAProxyConfig) { c.Backends = nil }, "backends"},
		{func(c *HAProxyConfig) { c.Backends[1].Name = "n 2" }, `name "n 2"`},
		{func(c *HAProxyConfig) { c.Backends[2].Name = "n1" }, "given twice"},
		{func(c *HAProxyConfig) { c.Backends[0].Port = 0 }, "port 0"},
		{func(c *HAProxyConfig) { c.CheckInterval = 0 }, "check interval"},
		{func(c *HAProxyConfig) { c.Fall = 0 }, "fall 0"},
		{func(c *HAProxyConfig) { c.Write = "" }, "write address"},
		{func(c *HAProxyConfig) { c.Check = "127.0.0.1" }, "check address"},
	} {
		c := testConfig()
		c.Backends = append([]Backend(nil), c.Backends...)
		tc.edit(&c)
		_, err := HAProxyText(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line with %q", c, err, tc.want)
		}
	}
}

func TestHATime(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1h", 2 * time.Second: "2s", 1500 * time.Millisecond: "1500ms", 10 * time.Millisecond: "10ms", 90 * time.Minute: "5400s"} {
		if got := hatime(d); got != want {
			t.Errorf("hatime(%s) = %s, want %s", d, got, want)
		}
	}
}
