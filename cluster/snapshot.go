package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/topology"
)

// A data snapshot is the data directory of a stopped server after a prepare, kept so that
// later deployments of the same installation and data shape start their nodes from a copy
// of it instead of loading the same rows again. Snapshots live under SnapshotsDir(), one
// directory each: snapshot.json (the Snapshot) and data/ (the datadir, with the server's
// identity removed: no auto.cnf, binary logs, relay logs, GTID history nor Galera state).
// Making and using one depends on where the servers run: the sandbox's part is
// sandbox_snapshot.go; the user's hosts' (kept on the hosts) is hosts_snapshot.go.

// SnapshotInstallation is what a snapshot's server was: flavor, version and binaries.
// Snapshots are used only by deployments of the same installation.
type SnapshotInstallation struct {
	Flavor  string `json:"flavor"`
	Version string `json:"version"`
	Root    string `json:"root,omitempty"`
	Server  string `json:"server"`
	Basedir string `json:"basedir,omitempty"`
}

// InstallationOf is b as a snapshot's installation.
func InstallationOf(b *Binaries) SnapshotInstallation {
	return SnapshotInstallation{Flavor: string(b.Flavor), Version: b.Version.String(), Root: b.Root, Server: b.Server, Basedir: b.Basedir}
}

// fields are the installation's fields in a fixed order, name and value.
func (i SnapshotInstallation) fields() [][2]string {
	return [][2]string{{"flavor", i.Flavor}, {"version", i.Version}, {"root", i.Root}, {"server", i.Server}, {"basedir", i.Basedir}}
}

// String is "mysql 9.7.0 /usr/sbin/mysqld" (root and basedir when set).
func (i SnapshotInstallation) String() string {
	s := i.Flavor + " " + i.Version + " " + i.Server
	if i.Root != "" {
		s += " in " + i.Root
	}
	if i.Basedir != "" {
		s += " basedir " + i.Basedir
	}
	return s
}

// DataShape is what decides the rows a prepare writes: field -> value (tables,
// table-size, the generator's seed...; see workload.DataShape).
type DataShape map[string]string

// String is the shape as "k=v k=v" in field order.
func (d DataShape) String() string {
	var parts []string
	for _, k := range slices.Sorted(mapKeys(d)) {
		parts = append(parts, k+"="+d[k])
	}
	return strings.Join(parts, " ")
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Snapshot is one stored data snapshot (snapshot.json).
type Snapshot struct {
	Name         string               `json:"name"`
	Installation SnapshotInstallation `json:"installation"`
	Shape        DataShape            `json:"shape"`
	// Created is when the prepare finished (UTC); PrepareS how long it took, seconds.
	Created  time.Time `json:"created"`
	PrepareS float64   `json:"prepare_s"`
	// GaleraPosition is "uuid:seqno" of the data as committed through Galera (MariaDB
	// with a Galera provider: the snapshot's server ran as a one-node cluster); the nodes
	// of a Galera deployment all start at it. "" when the server ran without Galera.
	GaleraPosition string `json:"galera_position,omitempty"`
	// Files are the entries of its data directory as they were made (snapshot_files.go):
	// every deployment from it checks them first. nil in a snapshot made before habench
	// recorded them (Unchecked: refused, it cannot be checked; MakeSnapshot makes it
	// again).
	Files []SnapshotFile `json:"files,omitempty"`
	dir   string
}

// Dir is the snapshot's directory (its datadir is Dir()/data).
func (s *Snapshot) Dir() string { return s.dir }

// Describe is "data from snapshot NAME (prepared at 2026-12-02T17:40:00Z)", the line a
// manifest records.
func (s *Snapshot) Describe() string {
	return fmt.Sprintf("data from snapshot %s (prepared at %s)", s.Name, s.Created.Format(time.RFC3339))
}

// SnapshotsDir is where snapshots are kept: DefaultCacheDir()/snapshots.
func SnapshotsDir() string { return filepath.Join(DefaultCacheDir(), "snapshots") }

// SnapshotStore is what a provider offers for data snapshots, in a file of its own
// (sandbox_snapshot.go: this machine's cache): an optional interface next to Provider, as
// Adopter is. A provider without it deploys with a prepare (SnapshotRefusal says so).
// Where snapshots are kept and how one is made and started from are the provider's;
// names, matching (Snapshot.Match) and the identity a snapshot must not keep
// (scrubIdentity, GaleraState) are this file's. Callers go through Store's methods.
type SnapshotStore interface {
	// LoadSnapshot reads snapshot name where spec's deployments would start from it; an
	// error wrapping fs.ErrNotExist when there is none by that name.
	LoadSnapshot(ctx context.Context, spec topology.Spec, name string) (*Snapshot, error)
	// MakeSnapshot loads data with prep into one new server of spec's installation
	// (deployed as name) and keeps its data directory, without its identity, as snapshot
	// SnapshotName(installation, shape); the server is removed in any case. An existing
	// snapshot of that name is returned as it is, unless it is Unchecked: that one is
	// replaced.
	MakeSnapshot(ctx context.Context, s *Store, spec topology.Spec, name string, shape DataShape, prep func(context.Context, *Cluster) error) (*Snapshot, error)
	// VerifySnapshot checks snap's files where spec's deployments would copy them from
	// (on every host that keeps a copy): a one-line *topology.FieldError on snapshot naming
	// the first file that differs from its list (Snapshot.Files) and how to remove it.
	VerifySnapshot(ctx context.Context, spec topology.Spec, snap *Snapshot) error
	// DeployFromSnapshot deploys spec with each node's datadir a copy of snap's (checked
	// by the caller: SnapshotRefusal, Match), after checking snap's files (as
	// VerifySnapshot, and on each host after copying it there): nothing is deployed from
	// a damaged snapshot.
	DeployFromSnapshot(ctx context.Context, s *Store, spec topology.Spec, snap *Snapshot) (*Cluster, error)
}

// The providers with snapshots.
var (
	_ SnapshotStore = sandboxProvider{}
	_ SnapshotStore = hostsProvider{}
)

// snapshotStore is spec's provider's SnapshotStore, or why there is none.
func snapshotStore(spec topology.Spec) (SnapshotStore, string) {
	p, err := ProviderOf(spec)
	if err != nil {
		return nil, err.Error()
	}
	st, ok := p.(SnapshotStore)
	if !ok {
		return nil, "provider " + p.Name() + " has no snapshots yet"
	}
	return st, ""
}

// LoadSnapshot reads snapshot name where spec's deployments start from it (its
// provider's SnapshotStore). Errors: *topology.FieldError when spec cannot start from a
// snapshot or the name is bad; an error wrapping fs.ErrNotExist when there is none.
func (s *Store) LoadSnapshot(ctx context.Context, spec topology.Spec, name string) (*Snapshot, error) {
	st, why := snapshotStore(spec)
	if why != "" {
		return nil, &topology.FieldError{Field: "snapshot", Value: name, Reason: why}
	}
	return st.LoadSnapshot(ctx, spec, name)
}

// VerifySnapshot checks that snap's files are as they were made, where spec's
// deployments would copy them from (its provider's SnapshotStore; every host with a copy).
// Errors: a one-line *topology.FieldError on snapshot naming the first file that differs
// and the command that removes the snapshot; the hosts' errors.
func (s *Store) VerifySnapshot(ctx context.Context, spec topology.Spec, snap *Snapshot) error {
	st, why := snapshotStore(spec)
	if why != "" {
		return &topology.FieldError{Field: "snapshot", Value: snap.Name, Reason: why}
	}
	return st.VerifySnapshot(ctx, spec, snap)
}

// MakeSnapshot loads data into one new server of spec's installation and keeps its data
// directory as snapshot SnapshotName(inst, shape), with its provider's SnapshotStore:
// name is the one-node deployment that makes it, prep the prepare. An existing snapshot
// of that name is returned as it is (the store's), unless it is Unchecked (made by an
// older habench): that one is made again. The server is removed in any case.
func (s *Store) MakeSnapshot(ctx context.Context, spec topology.Spec, name string, shape DataShape, prep func(context.Context, *Cluster) error) (*Snapshot, error) {
	st, why := snapshotStore(spec)
	if why != "" {
		return nil, &topology.FieldError{Field: "snapshot", Value: spec.Name, Reason: why}
	}
	return st.MakeSnapshot(ctx, s, spec, name, shape, prep)
}

// DeployFromSnapshot deploys spec like Deploy, its nodes' datadirs copies of snap's
// (Galera joiners too: every node starts with the data, no state transfer), with a fresh
// identity each (server UUID, empty binary logs and GTIDs; for Galera one common
// grastate.dat at the snapshot's GaleraPosition). spec must be one SnapshotRefusal
// allows and snap must match its installation (Snapshot.Match): else a one-line
// *topology.FieldError on snapshot, nothing deployed.
func (s *Store) DeployFromSnapshot(ctx context.Context, spec topology.Spec, snap *Snapshot) (*Cluster, error) {
	if why := SnapshotRefusal(spec); why != "" {
		return nil, &topology.FieldError{Field: "snapshot", Value: snap.Name, Reason: why}
	}
	bins, err := s.SpecBinaries(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := snap.Match(InstallationOf(bins), snap.Shape); err != nil {
		return nil, err
	}
	st, _ := snapshotStore(spec)
	return st.DeployFromSnapshot(ctx, s, spec, snap)
}

// SnapshotName is the name of the snapshot of inst and shape: "<flavor>-<version>-<8 hex
// digits of a hash of both>", so the same installation and shape always give the same name.
func SnapshotName(inst SnapshotInstallation, shape DataShape) string {
	h := fnv.New32a()
	for _, f := range inst.fields() {
		fmt.Fprintf(h, "%s=%s\n", f[0], f[1])
	}
	fmt.Fprintf(h, "shape %s\n", shape)
	return fmt.Sprintf("%s-%s-%08x", inst.Flavor, inst.Version, h.Sum32())
}

var snapshotNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,80}$`)

// validSnapshotName refuses a name that could address a path outside SnapshotsDir().
func validSnapshotName(name string) error {
	if !snapshotNameRE.MatchString(name) || strings.Contains(name, "..") {
		return &topology.FieldError{Field: "snapshot", Value: name, Reason: "want a snapshot name as `habench snapshot list` shows it"}
	}
	return nil
}

// Match refuses s for another installation or shape than inst and shape: a
// *topology.FieldError naming the first differing field, the snapshot's value and the
// one wanted, in one line. nil when both agree.
func (s *Snapshot) Match(inst SnapshotInstallation, shape DataShape) error {
	have := s.Installation.fields()
	for i, f := range inst.fields() {
		if have[i][1] != f[1] {
			return snapshotMismatch(s.Name, "installation."+f[0], have[i][1], f[1])
		}
	}
	keys := slices.Sorted(mapKeys(s.Shape))
	for k := range shape {
		if _, ok := s.Shape[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s.Shape[k] != shape[k] {
			return snapshotMismatch(s.Name, "shape."+k, s.Shape[k], shape[k])
		}
	}
	return nil
}

func snapshotMismatch(name, field, have, want string) error {
	return &topology.FieldError{Field: "snapshot", Value: name,
		Reason: fmt.Sprintf("made with %s %q, this deployment wants %q", field, have, want)}
}

// LoadSnapshot reads snapshot name. Errors: *topology.FieldError for a bad name, an error
// wrapping fs.ErrNotExist when there is no such snapshot.
func LoadSnapshot(name string) (*Snapshot, error) {
	if err := validSnapshotName(name); err != nil {
		return nil, err
	}
	return readSnapshot(filepath.Join(SnapshotsDir(), name))
}

func readSnapshot(dir string) (*Snapshot, error) {
	b, err := os.ReadFile(filepath.Join(dir, "snapshot.json"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("snapshot %s: %w (see `habench snapshot list`)", filepath.Base(dir), fs.ErrNotExist)
		}
		return nil, err
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "snapshot.json"), err)
	}
	s.dir = dir
	return &s, nil
}

// ListSnapshots returns every complete snapshot, sorted by name (nil when there is none).
func ListSnapshots() ([]*Snapshot, error) {
	entries, err := os.ReadDir(SnapshotsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Snapshot
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // .NAME.tmp: one being made (or left by a killed habench)
		}
		if s, err := readSnapshot(filepath.Join(SnapshotsDir(), e.Name())); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// RemoveSnapshot deletes snapshot name. Errors as LoadSnapshot.
func RemoveSnapshot(name string) error {
	s, err := LoadSnapshot(name)
	if err != nil {
		return err
	}
	return os.RemoveAll(s.dir)
}

// Size is the snapshot's size on disk in bytes (blocks allocated, as du counts them).
func (s *Snapshot) Size() (int64, error) {
	var total int64
	err := filepath.WalkDir(s.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += diskUsage(info)
		return nil
	})
	return total, err
}

// saveSnapshot writes s's snapshot.json into dir.
func saveSnapshot(dir string, s *Snapshot) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, "snapshot.json")
	if err := atomicfile.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// identityFiles are the datadir entries that carry a server's or its replication's
// identity (server UUID, persisted variables, binary and relay logs, replica positions,
// Galera state): a snapshot keeps none of them, so every node started from it is new.
var identityFiles = []string{"auto.cnf", "mysqld-auto.cnf", "binlog.*", "*-bin.*", "relay*", "*relay-bin*",
	"master.info", "multi-master.info", "relay-log.info", "grastate.dat", "gvwstate.dat", "galera.cache",
	"wsrep_recovery.*", "*.pid", "*.sock*"}

// scrubIdentity removes identityFiles from datadir.
func scrubIdentity(datadir string) error {
	for _, pat := range identityFiles {
		ms, err := filepath.Glob(filepath.Join(datadir, pat))
		if err != nil {
			return err
		}
		for _, m := range ms {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyDatadir copies datadir src to dst (which must not exist): reflinks where the
// filesystem shares blocks (cp --reflink=auto), a plain copy otherwise. Never hard links:
// InnoDB writes its files in place, which would change the snapshot too.
func copyDatadir(src, dst string) error {
	if out, err := exec.Command("cp", "-a", "--reflink=auto", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %v: %s", src, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// GaleraState is a grastate.dat that lets every node of a new Galera cluster start from
// the same data without a state transfer: the same position ("uuid:seqno", the one InnoDB
// recorded) on all, safe_to_bootstrap on the bootstrap node only.
func GaleraState(pos string, bootstrap bool) string {
	safe := 0
	if bootstrap {
		safe = 1
	}
	uuid, seqno, _ := strings.Cut(pos, ":")
	return fmt.Sprintf("# GALERA saved state\nversion: 2.1\nuuid:    %s\nseqno:   %s\nsafe_to_bootstrap: %d\n", uuid, seqno, safe)
}

// galeraPosition reads "uuid:seqno" from a grastate.dat written by a clean shutdown;
// an error when it has no defined position.
func galeraPosition(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return parseGaleraPosition(path, b)
}

// parseGaleraPosition is galeraPosition of grastate.dat text b read from path (named in
// the error).
func parseGaleraPosition(path string, b []byte) (string, error) {
	var uuid string
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "uuid" {
			uuid = strings.TrimSpace(v)
		}
	}
	_, seqno := parseGrastate(b)
	if uuid == "" || seqno < 0 {
		return "", fmt.Errorf("%s: no Galera position after a clean shutdown (uuid %q, seqno %d)", path, uuid, seqno)
	}
	return fmt.Sprintf("%s:%d", uuid, seqno), nil
}

// SnapshotKinds are the kinds a deployment (local sandbox or hosts) starts from a data
// snapshot; the others (group-dr) load their data through a prepare as before.
var SnapshotKinds = map[topology.Kind]bool{topology.Single: true, topology.Async: true, topology.SemiSync: true,
	topology.Group: true, topology.Galera: true, topology.GaleraArbitrator: true}

// OnDiskOptions are server options that change the data's layout on disk or what a
// CREATE TABLE makes (page size, default row format, character set...): a deployment that
// sets one of them gets no snapshot (made without them) and prepares as before.
var OnDiskOptions = []string{"innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces",
	"innodb_default_row_format", "innodb_file_per_table", "innodb_checksum_algorithm", "innodb_log_file_size",
	"innodb_redo_log_capacity", "lower_case_table_names", "character_set_server", "collation_server",
	"default_storage_engine", "innodb_compression_default", "innodb_encrypt_tables", "explicit_defaults_for_timestamp"}

// SnapshotRefusal says why spec cannot start from a snapshot ("" when it can): its
// provider keeps no snapshots (no SnapshotStore), a kind not in SnapshotKinds, or an
// option of OnDiskOptions.
func SnapshotRefusal(spec topology.Spec) string {
	if _, why := snapshotStore(spec); why != "" {
		return why
	}
	if !SnapshotKinds[spec.Kind] {
		return "kind " + string(spec.Kind) + " prepares its data as before"
	}
	for k := range spec.Options {
		for _, o := range OnDiskOptions {
			if normOptionName(k) == o {
				return "option " + k + " changes the data on disk"
			}
		}
	}
	return ""
}

func normOptionName(k string) string {
	b := []byte(k)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	s := string(b)
	if len(s) > 6 && s[:6] == "loose_" {
		s = s[6:]
	}
	return s
}

// diskUsage is the space fi takes on disk in bytes (its size when the blocks are unknown).
func diskUsage(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
