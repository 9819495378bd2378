// Package topology describes HA topologies as pure data: the Spec a user asks for,
// the server flavors and versions habench knows, their capabilities, and for each
// topology kind the per-node server options and ordered bootstrap steps. It imports
// nothing else of habench and performs no I/O.
package topology

import (
	"fmt"
	"regexp"
	"strconv"
)

// Version is a parsed server version, major.minor.patch.
type Version struct {
	Major, Minor, Patch int
}

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

// ParseVersion extracts the first major.minor[.patch] from s, as printed by
// `SELECT VERSION()` or `mysqld --version` ("10.11.19-MariaDB-0+deb12u1", "9.7.0").
// Error if s holds no version number.
func ParseVersion(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("no version number in %q", s)
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v, nil
}

// V builds a Version; a convenience for capability tables.
func V(major, minor, patch int) Version { return Version{major, minor, patch} }

// Compare returns -1, 0 or 1 as v is older than, equal to or newer than o.
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// AtLeast reports whether v >= o.
func (v Version) AtLeast(o Version) bool { return v.Compare(o) >= 0 }

// IsZero reports whether v is the zero Version (unknown).
func (v Version) IsZero() bool { return v == Version{} }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// MarshalText renders the version as "major.minor.patch".
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText parses "major.minor[.patch]".
func (v *Version) UnmarshalText(b []byte) error {
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}
