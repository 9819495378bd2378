package topology

import (
	"strings"
	"testing"
)

// TestCheckText: a byte that is not text is named by line and enclosing key, block or flow,
// and the others are counted.
func TestCheckText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"name: x\nworkload:\n  test: oltp\n  name: a\xffb\n", "line 4: field workload.name: invalid UTF-8 byte 0xff"},
		{"name: x\ntopologies:\n  - {name: a, kind: single}\n  - {name: b, flavor: mar\xc3\n", "line 4: field topologies[1].flavor: invalid UTF-8 byte 0xc3"},
		{"topologies:\n- name: a\n  kind: single\n- name: b\n  knobs:\n    sync_binlog: \x00\n", "line 6: field topologies[1].knobs.sync_binlog: control byte 0x00"},
		{"sweep:\n  threads: [1, 2, \xfe]\n", "line 2: field sweep.threads[2]: invalid UTF-8 byte 0xfe"},
		{"sweep:\n  knob.durability:\n    - {sync_binlog: 1, innodb_flush_log_at_trx_commit: 1}\n    - {sync_binlog: 0, innodb_flush_log_at_trx_commit: \xff}\n",
			"line 4: field sweep.knob.durability[1].innodb_flush_log_at_trx_commit: invalid UTF-8 byte 0xff"},
		{"description: >-\n  first\n  second \xff\nname: x\n", "line 3: field description: invalid UTF-8 byte 0xff"},
		{"# a comment \xff\nname: x\n", "line 1: invalid UTF-8 byte 0xff"},
		{"\x7fELF\x02\x01\x01\x00\x00\xff\xfe", "line 1: control byte 0x7f (and 7 more bytes that are not text: not a YAML file?)"},
	} {
		err := CheckText([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("CheckText(%q) = %v, want %s", c.in, err, c.want)
		}
	}
	for _, ok := range []string{"name: x\n", "name: \"caf\u00e9\"\r\n\tkind: async\n", ""} {
		if err := CheckText([]byte(ok)); err != nil {
			t.Errorf("CheckText(%q) = %v, want nil", ok, err)
		}
	}
	if _, err := ParseSpecYAML([]byte("name: t1\nkind: async\nflavor: maria\xffdb\n")); err == nil || !strings.Contains(err.Error(), "line 3: field flavor: invalid UTF-8 byte 0xff") {
		t.Errorf("ParseSpecYAML: %v", err)
	}
}
