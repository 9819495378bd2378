#!/usr/bin/env bash
# Builds a root filesystem with Debian sid's MariaDB (11.8 at the time of writing) and
# galera-4 (26.4.x), for comparisons with the system MariaDB: habench runs its servers with
# chroot (installation: {kind: rootfs, path: DIR}). Includes what Galera state transfers
# need inside the root: rsync, socat, mariadb-backup, iproute2 (ss), procps.
# Idempotent: does nothing when DIR already holds a working mariadbd.
# Usage: scripts/mariadb-rootfs.sh [DIR]   (default /var/cache/habench/rootfs/mariadb-sid)
# Needs root, debootstrap and Debian's package mirror (HABENCH_DEBIAN_MIRROR), nothing else.
set -euo pipefail
dir=${1:-/var/cache/habench/rootfs/mariadb-sid}
mirror=${HABENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -x "$dir/usr/sbin/mariadbd" ] && chroot "$dir" /usr/sbin/mariadbd --version >/dev/null 2>&1; then
  [ -e "$dir/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
  echo "rootfs: $dir already has $(chroot "$dir" /usr/sbin/mariadbd --version)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "rootfs: needs root (debootstrap and chroot)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "rootfs: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
tmp="$dir.tmp.$$"
trap 'rm -rf "$tmp" "$tmp.log"' EXIT
mkdir -p "$(dirname "$dir")"
echo "rootfs: debootstrap sid into $dir (MariaDB + galera-4, a few minutes)"
debootstrap --variant=minbase \
  --include=mariadb-server,mariadb-client,mariadb-backup,galera-4,rsync,socat,iproute2,procps \
  sid "$tmp" "$mirror" >"$tmp.log" 2>&1 || { tail -20 "$tmp.log" >&2; exit 1; }
rm -f "$tmp.log"
# mariadb-install-db resolves localhost; debootstrap writes no /etc/hosts.
[ -e "$tmp/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$tmp/etc/hosts"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "rootfs: $(chroot "$dir" /usr/sbin/mariadbd --version)"
