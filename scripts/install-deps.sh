#!/usr/bin/env bash
# Installs what habench's sandboxes and tests need on Debian/Ubuntu, as root, idempotently:
# MariaDB 10.11 + galera-4 + galera-arbitrator-4 (garbd, the arbitrator node) (+ rsync, mariadb-backup and socat for its state transfers) +
# sysbench (reference) and haproxy (a topology's proxy: member; its service is not started either) from apt, iproute2/util-linux for
# namespaces, openssh-server/client (the SSH tests' sshd in namespaces), debootstrap, node with hdr-histogram-js (the tests'
# second reader of latency.hlog), and the MySQL root filesystem (scripts/mysql-rootfs.sh).
# The packaged MariaDB service is not started (habench runs its own servers).
set -euo pipefail
rootfs="${HABENCH_ROOTFS:-/var/cache/habench/rootfs/mysql-sid}"
rootfs_pid=""
# The MySQL root filesystem (debootstrap: mostly downloading, a minute or more) is built
# while apt installs the rest, once debootstrap itself is there; its failure fails deps.
start_rootfs() {
  [ -z "$rootfs_pid" ] && command -v debootstrap >/dev/null || return 0
  "$(dirname "$0")/mysql-rootfs.sh" "$rootfs" & rootfs_pid=$!
}
pkgs="mariadb-server mariadb-client galera-4 galera-arbitrator-4 mariadb-backup socat sysbench haproxy rsync debootstrap iproute2 util-linux procps chromium openssh-server openssh-client"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then echo "deps: missing:$missing (run as root)" >&2; exit 1; fi
  echo "deps: installing$missing"
  # Keep the package's own mariadb service from starting on port 3306.
  had_policy=0; [ -e /usr/sbin/policy-rc.d ] && had_policy=1
  [ $had_policy = 1 ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
  trap '[ $had_policy = 1 ] || rm -f /usr/sbin/policy-rc.d' EXIT
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  case " $missing " in *" debootstrap "*)
    [ -x "$rootfs/usr/sbin/mysqld" ] || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ;;
  esac
  start_rootfs
  # Without Recommends: 44 packages instead of 149 (avahi, udev, cups helpers, samba
  # libraries, perl modules, MariaDB's compression providers), 25 s instead of 52 here.
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# node and npm (Debian's, unless a node with its npm is there already) and hdr-histogram-js,
# with which the tests read latency.hlog by another implementation than the one that wrote
# it: installed from its package-lock.json into cmd/habench/testdata/hdrjs/node_modules.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" != 0 ]; then echo "deps: missing: nodejs npm (run as root)" >&2; exit 1; fi
  echo "deps: installing nodejs npm"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
hdrjs="$(cd "$(dirname "$0")/.." && pwd)/cmd/habench/testdata/hdrjs"
if ! (cd "$hdrjs" && node -e 'const l=require("./package-lock.json").packages["node_modules/hdr-histogram-js"];
  process.exit(require("./node_modules/hdr-histogram-js/package.json").version===l.version?0:1)' 2>/dev/null); then
  echo "deps: npm ci in $hdrjs"
  (cd "$hdrjs" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
if [ -n "$rootfs_pid" ]; then
  wait "$rootfs_pid" || { echo "deps: the MySQL root filesystem (scripts/mysql-rootfs.sh $rootfs) failed" >&2; exit 1; }
else
  "$(dirname "$0")/mysql-rootfs.sh" "$rootfs"
fi
