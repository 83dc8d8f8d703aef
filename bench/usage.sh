#!/usr/bin/env bash
# bench/usage.sh BIN MODE WINDOW RSS_AT TAG (root, cgroup v1 or hybrid host): tend with
# 100 `sleep 3600` containers in a fresh cgroup of its own; prints "TAG cpu_s=<utime+stime
# over WINDOW s> rss_kib=<VmRSS at RSS_AT s>".
# MODE is instance.cgroups (auto, off), or none for a build that predates it. Used for
# the "Usage sampling" figures in bench/README.md.
set -euo pipefail
BIN=$1 MODE=$2 WINDOW=$3 RSSAT=$4 TAG=$5
N=${N:-100}
name=tend-w4-$$-$RANDOM
dir=$(mktemp -d /tmp/tend-usage.XXXXXX)
{ [ "$MODE" = none ] || echo "instance: {cgroups: $MODE}"; echo "containers:"; for ((i=1;i<=N;i++)); do echo "  - {name: c$i, command: [sleep, \"3600\"]}"; done; } > $dir/spec.yaml
cgs=()
while IFS=: read -r _ list path; do
  case $list in
    "") m=/sys/fs/cgroup/unified ;;
    cpu|cpuacct|memory|pids|freezer) m=/sys/fs/cgroup/$list ;;
    *) continue ;;
  esac
  d=$m$path/$name; d=${d//\/\//\/}; mkdir "$d"; cgs+=("$d")
done < /proc/self/cgroup
cleanup() {
  kill -TERM "${pid:-}" 2>/dev/null && wait "$pid" 2>/dev/null
  for d in "${cgs[@]}"; do
    for ((k=0;k<50;k++)); do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; [ -d "$d" ] || break; sleep 0.1; done
  done
  rm -rf "$dir"
}
trap cleanup EXIT
script=""; for d in "${cgs[@]}"; do script+="echo 0 > $d/cgroup.procs; "; done
cd $dir
sh -c "$script exec \"\$@\"" sh "$BIN" run --log-format json --log-level warn spec.yaml >$dir/log 2>&1 &
pid=$!
sleep 5
t() { awk '{print $14+$15}' /proc/$pid/stat; }
a=$(t); sleep $((RSSAT-5)); rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
sleep $((WINDOW-RSSAT+5)); b=$(t)
kill -TERM $pid; wait $pid || true
echo "$TAG cpu_s=$(awk -v a=$a -v b=$b 'BEGIN{printf "%.2f", (b-a)/100}') rss_kib=$rss running=$(grep -c . $dir/log || true)"
