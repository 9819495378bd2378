package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// galeraKeyVariables are the Galera settings recorded in manifest.json besides keyVariables.
var galeraKeyVariables = []string{
	"wsrep_on", "wsrep_cluster_name", "wsrep_sst_method", "wsrep_slave_threads", "wsrep_applier_threads",
	"wsrep_gtid_mode", "wsrep_gtid_domain_id", "wsrep_auto_increment_control", "wsrep_sync_wait",
	"wsrep_certification_rules", "wsrep_provider_version", "innodb_autoinc_lock_mode", "pxc_strict_mode",
}

// galeraProviderKeys are the wsrep_provider_options entries recorded in manifest.json (as
// "wsrep_provider_options.<key>"): flow control and the write-set cache; the full string is
// in variables.json.
var galeraProviderKeys = []string{"gcs.fc_limit", "gcs.fc_factor", "gcs.fc_single_primary", "gcs.fc_master_slave", "gcache.size", "evs.join_retrans_period"}

// galeraVariables adds to picked (a node's manifest variables) the Galera settings of vars:
// galeraKeyVariables, and instead of the long wsrep_provider_options string its entries
// galeraProviderKeys plus every key the user set in options.wsrep_provider_options.
func galeraVariables(picked, vars map[string]string, spec *topology.Spec) {
	for k, v := range pick(vars, galeraKeyVariables) {
		picked[k] = v
	}
	po, ok := vars["wsrep_provider_options"]
	if !ok {
		return
	}
	delete(picked, "wsrep_provider_options")
	keys := append([]string{}, galeraProviderKeys...)
	if spec != nil {
		for k, v := range spec.Options {
			if strings.ReplaceAll(k, "-", "_") == "wsrep_provider_options" {
				user, _ := topology.ParseProviderOptions(v)
				for _, o := range user {
					keys = append(keys, o.Key)
				}
			}
		}
	}
	all := ParseServerProviderOptions(po)
	for _, k := range keys {
		if v, ok := all[k]; ok {
			picked["wsrep_provider_options."+k] = v
		}
	}
}

// ParseServerProviderOptions reads @@wsrep_provider_options as the server prints it
// ("base_dir = /x; gcs.fc_limit = 16; ...") into key -> value.
func ParseServerProviderOptions(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(part, "=")
		if ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// idSpaceNote is the manifest's note when a node steps auto-increment values (Galera sets
// auto_increment_increment to the cluster size): "" when every increment is 1.
func idSpaceNote(nodes []schema.NodeInfo, tableSize int) string {
	for _, n := range nodes {
		if inc, _ := strconv.Atoi(n.Variables["auto_increment_increment"]); inc > 1 {
			return fmt.Sprintf("auto_increment_increment is %d on %s: habench prepare writes explicit ids 1..%d, so the id space is dense and every statement addresses an existing row (sysbench itself needs --auto_inc=off here)",
				inc, n.Name, tableSize)
		}
	}
	return ""
}

// consistencyPosition is what waitConsistent compares between nodes: the GTID position
// (GTIDPosition), except on MariaDB Galera nodes @@GLOBAL.gtid_binlog_pos: there
// gtid_current_pos lists only GTIDs carrying the node's own server_id, so it differs between
// nodes that applied the same write sets, while with wsrep_gtid_mode every node binlogs a
// write set under the same GTID.
func consistencyPosition(ctx context.Context, c *cluster.Cluster, db *sql.DB) (string, error) {
	mariadb := c.Capabilities().GTIDKind == topology.GTIDMariaDB
	if !c.Spec.Is(topology.Galera) || !mariadb {
		return GTIDPosition(ctx, db, mariadb)
	}
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&s); err != nil {
		return "", err
	}
	return normalizeGTID(s), nil
}

// sparseIDs checks that ids 1..min(100, tableSize) of sbtest1 exist (a cheap primary-key
// range read): a table loaded with auto-increment ids on Galera (sysbench without
// --auto_inc=off) holds only every cluster-size-th id, so deletes, updates and point selects
// miss rows and the statement mix changes. "" when at least 90% are there.
func sparseIDs(ctx context.Context, db *sql.DB, schema string, tableSize int) string {
	n := min(100, tableSize)
	var found int
	q := fmt.Sprintf("SELECT COUNT(*) FROM `%s`.sbtest1 WHERE id BETWEEN 1 AND ?", strings.ReplaceAll(schema, "`", "``"))
	if err := db.QueryRowContext(ctx, q, n).Scan(&found); err != nil || found*10 >= n*9 {
		return ""
	}
	return fmt.Sprintf("sbtest1 holds only %d of ids 1..%d: the id space is sparse (loaded with auto-increment ids on Galera? habench prepare writes ids 1..table-size), so statements miss rows", found, n)
}
