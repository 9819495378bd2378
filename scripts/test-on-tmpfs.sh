#!/usr/bin/env bash
# test-on-tmpfs.sh CMD [ARG...]: runs CMD (make test's go test runs) with the tests' servers
# and temporary directories in RAM, and removes it all afterwards, also when CMD fails.
#
# - TMPDIR is a new directory under /dev/shm (a tmpfs): every t.TempDir, state directory and
#   MariaDB sandbox datadir of the tests.
# - As root, each root filesystem's /habench (where the sandbox servers of that installation
#   keep their datadirs, e.g. /var/cache/habench/rootfs/mysql-sid/habench) gets a tmpfs over
#   it for the run, its cached datadir templates copied in. A /habench that holds anything
#   but templates (a sandbox of yours) is left alone: its servers would lose their files.
#
# Why: on the 2-core machine the suite is CPU-bound, and the kernel's writeback and
# unwritten-extent conversion of the servers' datadirs on ext4 took about a sixth of its CPU
# (a full run at -parallel 2: ~450 of ~2340 sampled core-seconds in kworker threads). The
# servers call fsync as always; a killed server keeps what it wrote in the page cache on
# disk and on tmpfs alike, and no test simulates losing power. Users' runs are not affected:
# this is the test harness only. Without /dev/shm it runs CMD as it is.
set -uo pipefail

if [ ! -d /dev/shm ] || [ ! -w /dev/shm ]; then
	exec "$@"
fi
tmp=$(mktemp -d /dev/shm/habench-test.XXXXXX) || exec "$@"
mounted=()

cleanup() {
	local m
	for m in "${mounted[@]}"; do
		# Lazy: a server a failed test left running must not keep the mount, or the disk
		# directory under it, from coming back.
		umount -l "$m" 2>/dev/null || echo "test-on-tmpfs: could not unmount $m" >&2
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" = 0 ]; then
	for hb in /var/cache/habench/rootfs/*/habench; do
		[ -d "$hb" ] || continue
		mountpoint -q "$hb" && continue
		other=$(find "$hb" -mindepth 1 -maxdepth 1 ! -name templates -print -quit)
		if [ -n "$other" ]; then
			echo "test-on-tmpfs: $hb holds more than templates ($other): its servers stay on disk" >&2
			continue
		fi
		if [ -d "$hb/templates" ]; then
			cp -a "$hb/templates" "$tmp/templates-$(basename "$(dirname "$hb")")" || continue
		fi
		mount -t tmpfs -o mode=0755 habench-test "$hb" || continue
		mounted+=("$hb")
		if [ -d "$tmp/templates-$(basename "$(dirname "$hb")")" ]; then
			mv "$tmp/templates-$(basename "$(dirname "$hb")")" "$hb/templates"
		fi
	done
fi

TMPDIR=$tmp "$@"
