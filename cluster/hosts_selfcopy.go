package cluster

// habench's own program on a user's host. A member that runs a habench command on its
// host (the proxy's health-check server, `habench proxy-check`; clients on hosts, issue
// 34, will too) gets a copy of this habench binary in its directory there, so that what
// it runs does not depend on a path back to this machine. The pieces, for any such
// member:
//
//   - checkSelfCopy, before a deploy (from a Program's OnHost): the binary can be read here
//     and the host's system and architecture (uname -sm) are the binary's; else a refusal
//     in one line naming the host, before anything is made anywhere.
//   - copySelf, when the member starts: the copy is recorded on the host first (the
//     member's HostRecord.Copies), then made (skipped when the same size and SHA-256 are
//     there), then run once (`habench --help`) so that a host that cannot run it (a C
//     library it lacks) is said at once.
//   - destroy removes it (destroyHostNode: the copy is in the member's directory, which
//     destroy removes with every process running from it).
//
//   - clients on hosts (`habench sysbench run --clients`): CopySelfToTemp makes a fresh
//     directory for the run and copies the binary there; RemoveSelfCopy removes it.
//
// The link agent (netem.installAgent) copies the binary on its own, to the directory of
// a node; it predates this file.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// SelfCopyName is the file name of habench's copy in a member's directory on its host.
const SelfCopyName = "habench"

// unameMachines are the `uname -m` words of each GOARCH habench may be built for.
var unameMachines = map[string][]string{
	"amd64": {"x86_64", "amd64"}, "arm64": {"aarch64", "arm64"}, "386": {"i386", "i486", "i586", "i686"},
	"arm": {"armv6l", "armv7l", "armv8l"}, "ppc64le": {"ppc64le"}, "s390x": {"s390x"},
	"riscv64": {"riscv64"}, "loong64": {"loongarch64"}, "mips64le": {"mips64"},
}

// selfArchMismatch is "" when a host whose `uname -sm` says uname ("Linux x86_64") runs
// a binary built for goos and goarch (runtime.GOOS, GOARCH), else what differs ("the
// host is Linux aarch64, this habench is linux/amd64"). Pure.
func selfArchMismatch(goos, goarch, uname string) string {
	f := strings.Fields(uname)
	if len(f) == 2 && strings.EqualFold(f[0], goos) && slices.Contains(unameMachines[goarch], f[1]) {
		return ""
	}
	return fmt.Sprintf("the host is %s, this habench is %s/%s", strings.Join(f, " "), goos, goarch)
}

// checkSelfCopy refuses host h for a copy of this habench binary, bin here
// (habenchBinary), when bin cannot be read or h's system and architecture (uname -sm) are
// not the binary's. field and value name what needs the copy (the proxy: "proxy",
// "haproxy"): a refusal is a *topology.FieldError on them naming the host; an error
// reaching h is returned as it is.
func checkSelfCopy(ctx context.Context, h host.Host, bin, field string, value any) error {
	if _, err := os.Stat(bin); err != nil {
		return &topology.FieldError{Field: field, Value: value, Reason: "habench copies its own program to " + h.Name() + ": " + err.Error()}
	}
	out, err := h.Run(ctx, "uname", "-sm")
	if err != nil {
		return fmt.Errorf("%s: uname -sm: %w", h.Name(), err)
	}
	if why := selfArchMismatch(runtime.GOOS, runtime.GOARCH, string(out)); why != "" {
		return &topology.FieldError{Field: field, Value: value, Reason: fmt.Sprintf("habench runs a copy of itself on %s, which cannot run it: %s", h.Name(), why)}
	}
	return nil
}

// copySelf puts this habench binary, bin here (habenchBinary), in the directory of member
// l on host h as l.nodeDir()/SelfCopyName (mode 0755) and returns that path: recorded first in the
// member's record there (HostRecord.Copies; the record and the directory must exist,
// ensureHostMemberDir), then copied unless a file of the same size and SHA-256 is there
// already (a restart), then run once (`habench --help`). Errors name the host: the
// record, reading the binary here, the copy, or a copy that does not run there.
func copySelf(ctx context.Context, h host.Host, l hostLayout, bin string) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("this habench program: %w", err)
	}
	dst := path.Join(l.nodeDir(), SelfCopyName)
	rec, err := readHostRecord(ctx, h, l)
	if err != nil {
		return "", fmt.Errorf("member %s: %w", l.Node, err)
	}
	if !slices.Contains(rec.Copies, dst) {
		rec.Copies = append(rec.Copies, dst)
		if err := writeHostRecord(ctx, h, l, rec); err != nil {
			return "", err
		}
	}
	return dst, putSelf(ctx, h, data, dst)
}

// putSelf writes data (this habench binary) to dst on h (mode 0755) unless a file of the
// same size and SHA-256 is there already, then runs it once (`habench --help`). Errors
// name the host.
func putSelf(ctx context.Context, h host.Host, data []byte, dst string) error {
	sum := sha256.Sum256(data)
	want := fmt.Sprintf("%d %s", len(data), hex.EncodeToString(sum[:]))
	got, _ := shRun(ctx, h, `[ -f "$1" ] && echo "$(wc -c < "$1") $(sha256sum < "$1" | cut -d' ' -f1)"`, dst)
	if strings.Join(strings.Fields(string(got)), " ") != want {
		const script = `umask 022; cat > "$1.part" && chmod 755 "$1.part" && mv -f "$1.part" "$1"`
		if _, err := host.RunInput(ctx, h, data, "sh", "-c", script, "sh", dst); err != nil {
			return fmt.Errorf("copy habench to %s on %s: %w", dst, h.Name(), err)
		}
	}
	if _, err := h.Run(ctx, dst, "--help"); err != nil {
		return fmt.Errorf("habench copied to %s does not run there: %s", h.Name(), firstLineOf(err.Error()))
	}
	return nil
}

// CheckSelfCopy refuses host h for a copy of this habench binary, bin here, as
// CopySelfToTemp would before making anything there: a *topology.FieldError on field
// naming the host when bin cannot be read or h's system and architecture (uname -sm) are
// not the binary's; an error reaching h as it is.
func CheckSelfCopy(ctx context.Context, h host.Host, bin, field string) error {
	return checkSelfCopy(ctx, h, bin, field, h.Name())
}

// CopySelfToTemp makes a fresh directory on host h (mktemp -d template, e.g.
// "/tmp/habench-client-XXXXXXXX") and copies this habench binary, bin here, into it as
// SelfCopyName (putSelf: run once there). It returns the directory and the copy's path.
// Refused before anything is made there, naming the host as field's value (a
// *topology.FieldError): bin cannot be read, or h's system and architecture (uname -sm)
// are not the binary's. On a later error the directory is removed again. The caller
// removes the directory when done (RemoveSelfCopy).
func CopySelfToTemp(ctx context.Context, h host.Host, bin, template, field string) (dir, exe string, err error) {
	if err := checkSelfCopy(ctx, h, bin, field, h.Name()); err != nil {
		return "", "", err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", "", fmt.Errorf("this habench program: %w", err)
	}
	out, err := h.Run(ctx, "mktemp", "-d", template)
	if err != nil {
		return "", "", fmt.Errorf("%s: mktemp -d %s: %s", h.Name(), template, firstLineOf(err.Error()))
	}
	dir = strings.TrimSpace(string(out))
	exe = path.Join(dir, SelfCopyName)
	if err := putSelf(ctx, h, data, exe); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = RemoveSelfCopy(rctx, h, dir)
		return "", "", err
	}
	return dir, exe, nil
}

// RemoveSelfCopy removes directory dir on host h and everything in it (rm -rf): a
// directory CopySelfToTemp made. Errors name the host.
func RemoveSelfCopy(ctx context.Context, h host.Host, dir string) error {
	if !path.IsAbs(dir) || path.Clean(dir) == "/" {
		return fmt.Errorf("%s: remove %q: not a directory habench made", h.Name(), dir)
	}
	if _, err := h.Run(ctx, "rm", "-rf", "--", dir); err != nil {
		return fmt.Errorf("%s: remove %s: %s", h.Name(), dir, firstLineOf(err.Error()))
	}
	return nil
}
