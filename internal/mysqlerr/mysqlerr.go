// Package mysqlerr classifies the errors MySQL and MariaDB servers answer with, for the
// packages that act on them (the workload engine, the checker).
package mysqlerr

import (
	"errors"

	"github.com/go-sql-driver/mysql"
)

// Code is the server error number of err (0: not an error the server answered with).
func Code(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// ReadOnly reports whether code is the refusal of a node that no longer takes writes:
// 1290 (--read-only / --super-read-only, ER_OPTION_PREVENTS_STATEMENT), 1792 (a read-only
// transaction, ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION) or 3100 (a Group Replication
// member that left the group refuses commits, ER_RUN_HOOK_ERROR). A client following the
// writer moves on it.
func ReadOnly(code uint16) bool {
	return code == 1290 || code == 1792 || code == 3100
}

// NotPartOfCluster reports whether code is the refusal of a node that is not part of its
// cluster now: ReadOnly's codes, or 1047 (ER_UNKNOWN_COM_ERROR: a Galera node outside the
// Primary component, or not yet Synced, "WSREP has not yet prepared node for application
// use"). A client failing over between nodes that all take writes moves on it.
func NotPartOfCluster(code uint16) bool {
	return ReadOnly(code) || code == 1047
}

// Storage reports whether code is a storage engine's refusal that a damaged data directory
// answers with: 1030 (ER_GET_ERRNO, "Got error N from storage engine", InnoDB's
// "Tablespace is missing"), 1034 (ER_NOT_KEYFILE), 1146 (ER_NO_SUCH_TABLE), 1194
// (ER_CRASHED_ON_USAGE), 1812 (ER_TABLESPACE_MISSING), 1877 (ER_TABLE_CORRUPT) or 1932
// (MariaDB's ER_NO_SUCH_TABLE_IN_ENGINE).
func Storage(code uint16) bool {
	switch code {
	case 1030, 1034, 1146, 1194, 1812, 1877, 1932:
		return true
	}
	return false
}
