package testserver

import "testing"

func TestStartMariaDB(t *testing.T) {
	s := StartMariaDB(t, "--log-bin=mysql-bin", "--server-id=7")
	db := s.Open(t, "")
	var id int
	if err := db.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id != 7 {
		t.Fatalf("server_id = %d, want 7 (extra options not applied)", id)
	}
}
