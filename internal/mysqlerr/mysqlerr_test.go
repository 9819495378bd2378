package mysqlerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestCodeAndReadOnly(t *testing.T) {
	ro := fmt.Errorf("commit: %w", &mysql.MySQLError{Number: 1290, Message: "The MySQL server is running with the --super-read-only option"})
	for _, c := range []struct {
		err      error
		code     uint16
		readOnly bool
	}{
		{ro, 1290, true},
		{&mysql.MySQLError{Number: 1792}, 1792, true},
		{&mysql.MySQLError{Number: 3100}, 3100, true},
		{&mysql.MySQLError{Number: 1213}, 1213, false}, // deadlock: retry, not a move
		{errors.New("invalid connection"), 0, false},
		{nil, 0, false},
	} {
		if got := Code(c.err); got != c.code {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.code)
		}
		if got := ReadOnly(Code(c.err)); got != c.readOnly {
			t.Errorf("ReadOnly(%d) = %v, want %v", c.code, got, c.readOnly)
		}
		if got := NotPartOfCluster(Code(c.err)); got != c.readOnly {
			t.Errorf("NotPartOfCluster(%d) = %v, want %v (every read-only refusal)", c.code, got, c.readOnly)
		}
	}
	if !NotPartOfCluster(1047) || ReadOnly(1047) {
		t.Errorf("1047 (a Galera node not ready): want NotPartOfCluster only")
	}
}
