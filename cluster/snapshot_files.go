package cluster

// A snapshot's file list: every entry of its data directory as it was when the snapshot
// was made (Snapshot.Files, in snapshot.json), so that a deployment can check, before it
// copies anything, that no file was lost, cut short, added or (for the small ones, whose
// content is summed) changed since. The check reads the directory's entries and the small
// files only: a few hundred stat calls and well under a megabyte read for a sysbench
// snapshot, next to a deploy of seconds. The local sandbox lists with listSnapshotFiles,
// the user's hosts with hostSnapshotFilesScript (the same list, made by find and sha256sum
// on the host).

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/habench/habench/topology"
)

// SnapshotSumMax is the largest file, in bytes, whose content a snapshot's file list sums
// (SHA-256): the many small files of a datadir (table definitions, the system tables' Aria
// and MyISAM files, option files), cheap to read at every deployment; larger ones (InnoDB
// tablespaces, redo and undo logs) are checked by name and size.
const SnapshotSumMax = 64 << 10

// SnapshotFile is one entry of a snapshot's data directory: Path relative to it,
// slash-separated; Type "f" (regular file), "d" (directory) or "o" (anything else); Size
// in bytes (0 but for files); SHA256 of the content (hex) for files of at most
// SnapshotSumMax bytes.
type SnapshotFile struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// listSnapshotFiles lists datadir's entries (not datadir itself), sorted by path, summing
// the files of at most SnapshotSumMax bytes. Errors: the walk's and the reads'.
func listSnapshotFiles(datadir string) ([]SnapshotFile, error) {
	var out []SnapshotFile
	err := filepath.WalkDir(datadir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == datadir {
			return nil
		}
		rel, err := filepath.Rel(datadir, p)
		if err != nil {
			return err
		}
		f := SnapshotFile{Path: filepath.ToSlash(rel), Type: "o"}
		switch {
		case d.IsDir():
			f.Type = "d"
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f.Type, f.Size = "f", info.Size()
			if f.Size <= SnapshotSumMax {
				if f.SHA256, err = fileSHA256(p); err != nil {
					return err
				}
			}
		}
		out = append(out, f)
		return nil
	})
	sortSnapshotFiles(out)
	return out, err
}

// fileSHA256 is the hex SHA-256 of file p's content.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sortSnapshotFiles(l []SnapshotFile) {
	sort.Slice(l, func(i, j int) bool { return l[i].Path < l[j].Path })
}

// hostSnapshotFilesScript prints, in directory "$1" on a host, the list listSnapshotFiles
// makes: "d 0 PATH", "f SIZE PATH" or "o 0 PATH" per entry (find -printf), then "s SHA256
// ./PATH" per file of at most SnapshotSumMax bytes (sha256sum); exit 3 when "$1" is not
// there. parseHostSnapshotFiles reads it.
var hostSnapshotFilesScript = `cd "$1" 2>/dev/null || exit 3
find . -mindepth 1 \( -type d -printf 'd 0 %P\n' \) -o \( -type f -printf 'f %s %P\n' \) -o -printf 'o 0 %P\n'
find . -type f -size -` + strconv.Itoa(SnapshotSumMax+1) + `c -exec sha256sum -- {} + | sed 's/^/s /'`

// parseHostSnapshotFiles reads hostSnapshotFilesScript's output into the list, sorted by
// path. Pure.
func parseHostSnapshotFiles(out string) ([]SnapshotFile, error) {
	byPath := map[string]int{}
	var list []SnapshotFile
	var sums [][2]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, " ", 3)
		if len(f) < 3 {
			return nil, fmt.Errorf("file list: line %q", l)
		}
		if f[0] == "s" {
			// "s HASH  ./PATH": sha256sum's two spaces, find's ./ prefix.
			p, ok := strings.CutPrefix(f[2], " ./")
			if !ok {
				return nil, fmt.Errorf("file list: line %q", l)
			}
			sums = append(sums, [2]string{p, f[1]})
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || (f[0] != "f" && f[0] != "d" && f[0] != "o") {
			return nil, fmt.Errorf("file list: line %q", l)
		}
		byPath[f[2]] = len(list)
		list = append(list, SnapshotFile{Path: f[2], Type: f[0], Size: size})
	}
	for _, s := range sums {
		i, ok := byPath[s[0]]
		if !ok {
			return nil, fmt.Errorf("file list: a sum of %s, which is not listed", s[0])
		}
		list[i].SHA256 = s[1]
	}
	sortSnapshotFiles(list)
	return list, nil
}

// firstDifference compares have, the data directory's list now, with want, the list made
// with the snapshot (both sorted by path), and describes the first entry, by path, that
// differs: "data/sbtest/sbtest1.ibd is missing (98304 bytes when the snapshot was made)",
// "... has 4096 bytes, 98304 when the snapshot was made", "... changed (its SHA-256
// differs)", "... was not there when the snapshot was made"; "" when they agree.
func firstDifference(want, have []SnapshotFile) string {
	i, j := 0, 0
	for i < len(want) || j < len(have) {
		switch {
		case j == len(have) || (i < len(want) && want[i].Path < have[j].Path):
			return "data/" + want[i].Path + " is missing (" + describeEntry(want[i]) + " when the snapshot was made)"
		case i == len(want) || have[j].Path < want[i].Path:
			return "data/" + have[j].Path + " was not there when the snapshot was made (" + describeEntry(have[j]) + " now)"
		}
		w, h := want[i], have[j]
		switch {
		case w.Type != h.Type:
			return fmt.Sprintf("data/%s is %s, %s when the snapshot was made", w.Path, describeEntry(h), describeEntry(w))
		case w.Size != h.Size:
			return fmt.Sprintf("data/%s has %d bytes, %d when the snapshot was made", w.Path, h.Size, w.Size)
		case w.SHA256 != h.SHA256:
			return fmt.Sprintf("data/%s changed since the snapshot was made (same size, another SHA-256)", w.Path)
		}
		i, j = i+1, j+1
	}
	return ""
}

// describeEntry is "a directory", "98304 bytes" or "not a file nor a directory".
func describeEntry(f SnapshotFile) string {
	switch f.Type {
	case "d":
		return "a directory"
	case "f":
		return strconv.FormatInt(f.Size, 10) + " bytes"
	}
	return "not a file nor a directory"
}

// SnapshotUnchecked is the state of a snapshot made before habench recorded a snapshot's
// files (Unchecked): not damaged as far as anyone knows, but it cannot be checked.
const SnapshotUnchecked = "unchecked (made by an older habench)"

// Unchecked reports whether s has no list of its files (made by a habench that did not
// record one): it cannot be checked, so no deployment starts from it; a run with
// snapshots: true makes it again.
func (s *Snapshot) Unchecked() bool { return s.Files == nil }

// stateOf is s's state given have, its data directory's list now: "ok",
// SnapshotUnchecked, or "damaged: " and the first entry that differs (firstDifference).
func (s *Snapshot) stateOf(have []SnapshotFile) string {
	if s.Unchecked() {
		return SnapshotUnchecked
	}
	if why := firstDifference(s.Files, have); why != "" {
		return "damaged: " + why
	}
	return "ok"
}

// LocalState is the state of snapshot s on this machine (stateOf its data directory),
// as `habench snapshot list` shows it; "damaged: cannot read data/: ERROR" when the
// directory cannot be read.
func (s *Snapshot) LocalState() string {
	have, err := listSnapshotFiles(filepath.Join(s.dir, "data"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "damaged: cannot read data/: " + err.Error()
	}
	return s.stateOf(have)
}

// RemoveAdvice is how to get rid of a snapshot that cannot be used with command rm, and
// how a new one comes: "remove it with `RM` (a run with snapshots: true makes a new one)".
func RemoveAdvice(rm string) string {
	return "remove it with `" + rm + "` (a run with snapshots: true makes a new one)"
}

// checkFiles refuses snapshot s when have, its data directory's list now (where says
// where: "" on this machine, " on HOST"), differs from the list made with it ("damaged"),
// or when it has none ("unchecked": made by a habench that did not record one): a one-line
// *topology.FieldError on snapshot naming the first entry that differs and fix, what to do
// about it (RemoveAdvice, or for a host's copy how to remove that copy).
func (s *Snapshot) checkFiles(have []SnapshotFile, where, fix string) error {
	switch st := s.stateOf(have); {
	case st == "ok":
		return nil
	case st == SnapshotUnchecked:
		return &topology.FieldError{Field: "snapshot", Value: s.Name,
			Reason: st + ", without the list of its files a deployment checks it by: nothing was deployed from it: " + fix}
	default:
		return &topology.FieldError{Field: "snapshot", Value: s.Name,
			Reason: fmt.Sprintf("damaged%s: %s; nothing was deployed from it: %s", where, strings.TrimPrefix(st, "damaged: "), fix)}
	}
}

// verifyLocal checks snapshot s's data directory on this machine against its file list
// (checkFiles). Errors: checkFiles's, or the directory's when it cannot be read.
func (s *Snapshot) verifyLocal() error {
	have, err := listSnapshotFiles(filepath.Join(s.dir, "data"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot %s: %w", s.Name, err)
	}
	return s.checkFiles(have, "", RemoveAdvice(SnapshotRmCommand(topology.Spec{}, s.Name)))
}

// SnapshotRmCommand is the command that removes snapshot name where spec's deployments
// start from it: "habench snapshot rm NAME" on this machine; on the user's hosts with
// `--hosts` (spec's) and `--host-dir` when not the default.
func SnapshotRmCommand(spec topology.Spec, name string) string {
	if !spec.IsHosts() {
		return "habench snapshot rm " + name
	}
	spec.Defaults()
	return hostSnapshotRm(name, spec.Hosts, hostsRootDir(spec))
}

// hostSnapshotRm is "habench snapshot rm NAME --hosts H1,H2" with "--host-dir DIR" when
// hostDir is not the default.
func hostSnapshotRm(name string, hosts []string, hostDir string) string {
	rm := "habench snapshot rm " + name + " --hosts " + strings.Join(hosts, ",")
	if hostDir != topology.DefaultHostDir {
		rm += " --host-dir " + hostDir
	}
	return rm
}
