#!/bin/sh
# Regenerates knob/variables/*.txt, the server variable names habench checks knob names
# against before anything is deployed (docs/knobs.md#names-are-checked-before-deploy):
# the option names of `--verbose --help` (dashes as underscores) plus, for MariaDB, SHOW
# GLOBAL VARIABLES of a throwaway server on a socket, and the Galera provider's option
# keys (SELECT @@wsrep_provider_options of a one-node cluster on 127.0.0.1).
# Needs root, MariaDB + galera-4 from apt and the MySQL rootfs (make deps).
set -eu
out=$(cd "$(dirname "$0")/.." && pwd)/knob/variables
rootfs=${HABENCH_ROOTFS:-/var/cache/habench/rootfs/mysql-sid}
d=$(mktemp -d /tmp/knobvars.XXXXXX)
trap 'kill $(cat $d/pid 2>/dev/null) 2>/dev/null || true; sleep 2; rm -rf $d' EXIT
helpvars() { awk '/^Variables \(--variable-name=value\)/{f=1;next} f&&/^-----/{g=1;next} g&&NF==0{exit} g{print $1}' | tr - _; }
header() { printf '# %s: server variable names (scripts/knob-variables.sh)\n' "$1"; }

mv=$(chroot "$rootfs" mysqld --version | grep -o 'Ver [0-9]*\.[0-9]*' | cut -d' ' -f2)
{ header "$(chroot "$rootfs" mysqld --version)"
  chroot "$rootfs" mysqld --no-defaults --verbose --help --user=root \
    --plugin-load-add='group_replication.so;semisync_source.so;semisync_replica.so' 2>/dev/null | helpvars | sort -u; } >"$out/mysql-$mv.txt"

v=$(mariadbd --version | grep -o 'Ver [0-9]*\.[0-9]*' | cut -d' ' -f2)
mariadb-install-db --no-defaults --datadir=$d/data --auth-root-authentication-method=normal --user=root >/dev/null 2>&1
(mariadbd --no-defaults --user=root --datadir=$d/data --socket=$d/s --skip-networking --log-error=$d/err \
  --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so --wsrep-cluster-address=gcomm:// \
  --wsrep-node-address=127.0.0.1 --wsrep-provider-options='gmcast.listen_addr=tcp://127.0.0.1:14567;ist.recv_addr=127.0.0.1:14568' \
  --binlog-format=ROW & echo $! >$d/pid)
for _ in $(seq 60); do [ -S $d/s ] && break; sleep 0.5; done
mariadb -S $d/s -uroot -N -e 'SHOW GLOBAL VARIABLES' | awk '{print $1}' >$d/show
{ header "$(mariadbd --version)"
  { mariadbd --no-defaults --verbose --help 2>/dev/null | helpvars; cat $d/show; } | sort -u; } >"$out/mariadb-$v.txt"
gv=$(mariadb -S $d/s -uroot -N -e "SHOW GLOBAL STATUS LIKE 'wsrep_provider_version'" | awk '{print $2}' | cut -d. -f1-2)
{ printf '# galera %s: wsrep_provider_options keys (scripts/knob-variables.sh)\n' "$gv"
  mariadb -S $d/s -uroot -N -e 'SELECT @@wsrep_provider_options' | tr ';' '\n' | sed 's/=.*//; s/^ *//; s/ *$//' | grep . | sort -u; } >"$out/galera.txt"
ls -l "$out"
