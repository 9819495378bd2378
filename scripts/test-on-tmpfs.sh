#!/usr/bin/env bash
# test-on-tmpfs.sh CMD [ARG...]: runs CMD (make test's go test runs) with the tests' servers
# and temporary directories in RAM.
#
# As root, CMD runs in a mount namespace of its own (unshare --mount, private propagation)
# in which /tmp, and each root filesystem's /habench (where that installation's sandbox
# servers keep their datadirs, its cached datadir templates copied in) and /tmp, are tmpfs
# mounts. Paths stay as they are (a test's directories keep their lengths, which unix
# socket and host_dir limits count); nobody outside the namespace sees the mounts, and they
# go away with its last process: nothing to unmount or remove, also after a failure.
# Without root, or where unshare is refused, CMD runs as it is, on disk.
#
# Why: whatever a run writes (datadirs, state directories, logs, snapshots) is gone when it
# ends, even when it was killed, and the 2 cores do no disk writeback for it. Measured on
# this machine, whole runs at -parallel 2: 23m04s of tests on disk, 22m52s on tmpfs (one run
# each: no clear change in wall time; the packages that passed in both ran 0-25% faster).
# The servers call fsync as always; a killed server keeps what it wrote in the page cache on
# disk and on tmpfs alike, and no test simulates losing power. Users' runs are not affected:
# this is the test harness only.
set -uo pipefail

if [ -z "${HABENCH_TEST_TMPFS:-}" ]; then
	if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
		exec unshare --mount --propagation private env HABENCH_TEST_TMPFS=1 bash "$0" "$@"
	fi
	exec "$@"
fi

# In the namespace. The templates are read before the tmpfs hides them.
keep=$(mktemp -d /dev/shm/habench-templates.XXXXXX) || exit 1
for root in /var/cache/habench/rootfs/*/; do
	root=${root%/}
	[ -d "$root/habench/templates" ] && cp -a "$root/habench/templates" "$keep/$(basename "$root")"
done
mount -t tmpfs -o mode=1777,size=75% habench-test /tmp || { rm -rf "$keep"; exit 1; }
for root in /var/cache/habench/rootfs/*/; do
	root=${root%/}
	for d in habench tmp; do
		[ -d "$root/$d" ] || continue
		mount -t tmpfs -o mode="$([ $d = tmp ] && echo 1777 || echo 0755)" habench-test "$root/$d" || { rm -rf "$keep"; exit 1; }
	done
	if [ -d "$keep/$(basename "$root")" ]; then
		cp -a "$keep/$(basename "$root")" "$root/habench/templates"
	fi
done
rm -rf "$keep"
exec "$@"
