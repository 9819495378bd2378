#!/usr/bin/env bash
# Builds the MySQL root filesystem habench runs MySQL (with Group Replication, semi-sync,
# clone and the GR flow-control stats component) from: Debian sid's mysql-server-core,
# made with debootstrap. Idempotent: does nothing when DIR already holds a working mysqld.
# Usage: scripts/mysql-rootfs.sh [DIR]   (default /var/cache/habench/rootfs/mysql-sid)
set -euo pipefail
dir=${1:-/var/cache/habench/rootfs/mysql-sid}
mirror=${HABENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -x "$dir/usr/sbin/mysqld" ] && chroot "$dir" /usr/sbin/mysqld --version >/dev/null 2>&1; then
  echo "rootfs: $dir already has $(chroot "$dir" /usr/sbin/mysqld --version)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "rootfs: needs root (debootstrap and chroot)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "rootfs: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
tmp="$dir.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$dir")"
echo "rootfs: debootstrap sid into $dir (about 1 minute, 650 MB)"
debootstrap --variant=minbase --include=mysql-server-core,mysql-client-core sid "$tmp" "$mirror" >"$tmp.log" 2>&1 || {
  tail -20 "$tmp.log" >&2; rm -f "$tmp.log"; exit 1; }
rm -f "$tmp.log"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "rootfs: $(chroot "$dir" /usr/sbin/mysqld --version)"
