#!/usr/bin/env bash
# The CPU one MySQL server start takes, as the sandboxes start it: a copy of the
# installation's template datadir, a chrooted mysqld with a group member's plugins, timed
# until "ready for connections"; the server is then killed and its copy removed.
#   scripts/mysqld-start-cpu.sh [-n ROUNDS] [name=value ...]   (root; after make deps and a
#   first MySQL deploy, which makes the template)
# prints per start: wall s, user and system CPU s, RSS MB; then the means. The options are
# appended to the server's option file (for example the Makefile's TESTSERVEROPTS).
set -euo pipefail
rounds=1
if [ "${1:-}" = -n ]; then rounds=$2; shift 2; fi
R=${HABENCH_ROOTFS:-/var/cache/habench/rootfs/mysql-sid}
T=$(ls -d "$R"/habench/templates/mysql-*/data | head -1)
[ -d "$T" ] || { echo "no MySQL template under $R/habench/templates: deploy a MySQL sandbox once" >&2; exit 1; }
hz=$(getconf CLK_TCK)
for i in $(seq "$rounds"); do
  rel=/tmp/hb-startcpu.$$.$i D=$R$rel
  rm -rf "$D"; mkdir -p "$D/tmp"; cp -a "$T" "$D/data"
  { printf '[mysqld]\nuser=root\ndatadir=%s/data\nsocket=%s/mysqld.sock\npid_file=%s/mysqld.pid\n' $rel $rel $rel
    printf 'log_error=%s/error.log\ntmpdir=%s/tmp\nsecure_file_priv=%s/tmp\nskip_networking\nmysqlx=OFF\n' $rel $rel $rel
    printf 'max_connections=1000\nserver_id=2\nlog_bin=binlog\ngtid_mode=ON\nenforce_gtid_consistency=ON\nplugin_load_add=group_replication.so;mysql_clone.so\n'
    for o in "$@"; do echo "$o"; done; } > "$D/my.cnf"
  t0=$(date +%s%N)
  chroot "$R" /usr/sbin/mysqld --defaults-file=$rel/my.cnf & pid=$!
  until grep -q 'ready for connections' "$D/error.log" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { cat "$D/error.log" >&2; rm -rf "$D"; exit 1; }
    sleep 0.02
  done
  t1=$(date +%s%N)
  read -r -a st < /proc/$pid/stat
  rss=$(awk '/VmRSS/{print int($2/1024)}' /proc/$pid/status)
  kill -9 $pid; wait $pid 2>/dev/null || true; rm -rf "$D"
  awk -v w=$(( (t1-t0)/1000000 )) -v u=${st[13]} -v s=${st[14]} -v hz=$hz -v r=$rss \
    'BEGIN{printf "wall %.2f user %.2f sys %.2f rss %d\n", w/1000, u/hz, s/hz, r}'
done | awk '{print; w+=$2; c+=$4+$6; r+=$8} END {printf "mean of %d: wall %.2f s, cpu %.2f s, rss %d MB\n", NR, w/NR, c/NR, r/NR}'
