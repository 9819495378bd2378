package checker

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// checkerServer starts a private MariaDB for one test and returns a pool (16 connections)
// to its database ck, and a context that ends after 2 minutes or with the test.
func checkerServer(t *testing.T) (*sql.DB, context.Context) {
	t.Helper()
	s := testserver.StartMariaDB(t)
	testserver.Exec(t, s.Open(t, ""), "CREATE DATABASE ck")
	db := s.Open(t, "ck")
	db.SetMaxOpenConns(16)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return db, ctx
}
