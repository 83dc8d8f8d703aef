#!/usr/bin/env bash
# bench/curve.sh — how tend's costs grow from 1 to 1000 containers (`make bench-curve`).
#
#   make bench-curve                          # = make build && bash bench/curve.sh  (~5 min)
#   CURVE_N=1,10,100 CURVE_WINDOW=10 bash bench/curve.sh
#   CURVE_CGROUPS=off CURVE_MODES=sleep bash bench/curve.sh   # tend without cgroups, sleepers only
#
# For each count, tend runs sleepers (static `stamp` children that write the time of
# their exec and pause), then the same with an HTTP readiness check every second each,
# against one benchhttpd on 127.0.0.1:CURVE_PORT (31000). Each tend runs in a fresh
# cgroup of its own with the default `cgroups: auto` (root, cgroup v1 or hybrid host):
# tend puts each container in a group below its own, so its own group's memory charge
# is tend's alone. See benchctl's curve.go for what is measured.
# Writes bench/curve.md (the table), bench/curve.svg (the chart, by gnuplot),
# bench/out/curve.jsonl (the records) and bench/out/curve.dat (the chart's data); with
# CURVE_OUT=NAME, bench/NAME.md and bench/NAME.svg instead.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/bench/lib.sh"
cd "$ROOT"
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
TEND=$ROOT/bin/tend
OUT=$ROOT/bench/out
log() { printf '[curve %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

[[ -x $TEND ]] || die "$TEND is missing: run 'make build' (or 'make bench-curve')"
[[ $(id -u) == 0 ]] || die "root is needed: each tend runs in a cgroup the bench makes"
WORK=$(mktemp -d /tmp/tend-curve.XXXXXX)
# tend runs from a copy written with write(2), as an installed binary is (bench/lib.sh).
fresh_copy "$TEND" "$WORK/tend" && TEND=$WORK/tend
CUR=""
cleanup() {
	local rc=$?
	if [[ -n $CUR ]] && kill -0 "$CUR" 2>/dev/null; then
		kill -TERM "$CUR" 2>/dev/null || true # benchctl kills its tend, the server and their cgroups
		wait "$CUR" 2>/dev/null || true
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! command -v gnuplot >/dev/null; then
	log "apt-get install -y gnuplot-nox"
	{ apt-get install -y gnuplot-nox || { apt-get update && apt-get install -y gnuplot-nox; }; } >"$WORK/apt.log" 2>&1 ||
		{ tail -n 5 "$WORK/apt.log" >&2; die "gnuplot is missing and could not be installed"; }
fi
command -v cc >/dev/null || die "no C compiler for the stamp child (apt-get install gcc libc6-dev)"
command -v script >/dev/null || log "script(1) is missing: no figure with tend top attached"

log "building helpers"
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/benchctl" ./bench/cmd/benchctl
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/benchhttpd" ./bench/cmd/benchhttpd
cc -O2 -static -o "$WORK/stamp" bench/stamp/stamp.c 2>/dev/null || cc -O2 -o "$WORK/stamp" bench/stamp/stamp.c
mkdir -p "$OUT"
rm -f "$OUT/${CURVE_OUT:-curve}.jsonl"
sync "$TEND"

START=$(date +%s)
log "curve: ${CURVE_N:-1,10,100,1000} containers, sleepers then checks, ${CURVE_WINDOW:-15} s windows"
"$WORK/benchctl" curve -tend "$TEND" -stamp "$WORK/stamp" -httpd "$WORK/benchhttpd" -port "${CURVE_PORT:-31000}" \
	-n "${CURVE_N:-1,10,100,1000}" -modes "${CURVE_MODES:-sleep,checks}" -cgroups "${CURVE_CGROUPS:-auto}" -window "${CURVE_WINDOW:-15}s" -out "$OUT/${CURVE_OUT:-curve}.jsonl" >"$WORK/curve.out" &
CUR=$!
wait "$CUR"
CUR=""
ELAPSED=$(($(date +%s) - START))

"$WORK/benchctl" curve-report -in "$OUT/${CURVE_OUT:-curve}.jsonl" -md "$WORK/table.md" -dat "$OUT/${CURVE_OUT:-curve}.dat"
gnuplot -e "dat='$OUT/${CURVE_OUT:-curve}.dat'; out='$ROOT/bench/${CURVE_OUT:-curve}.svg'" bench/curve.gp
{
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); measurements took ${ELAPSED} s"
	echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), Linux $(uname -r); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- tend: $("$TEND" version 2>/dev/null | head -n 1) ($("$GO" version | awk '{print $3}')), \`cgroups: ${CURVE_CGROUPS:-auto}\`, in a fresh cgroup of its own"
	echo "- command: \`make bench-curve\`$([[ -n ${CURVE_N:-}${CURVE_WINDOW:-}${CURVE_CGROUPS:-}${CURVE_MODES:-} ]] && echo " with CURVE_N=${CURVE_N:-} CURVE_WINDOW=${CURVE_WINDOW:-} CURVE_CGROUPS=${CURVE_CGROUPS:-} CURVE_MODES=${CURVE_MODES:-}")"
	echo
	cat "$WORK/table.md"
} >"$ROOT/bench/${CURVE_OUT:-curve}.md"
cat "$ROOT/bench/${CURVE_OUT:-curve}.md"
log "done in ${ELAPSED} s: bench/curve.md, bench/curve.svg"
