#!/usr/bin/env bash
# bench/run.sh — tend against tini, pebble and supervisord (see bench/README.md).
#
#   make bench                      # = make build && bash bench/run.sh
#   BENCH_QUICK=1 bash bench/run.sh # fewer repetitions, 10 s probe window
#
# Scenarios (every supervisor in the same run, repetitions interleaved):
#   1. launch -> first container exec (static C child stamps CLOCK_MONOTONIC)
#   2. supervisor RSS/PSS with 1 and 100 `sleep` containers
#   3. SIGTERM -> supervisor exit with 1 and 100 `sleep` containers (same runs as 2)
#   4. supervisor CPU and RSS with 100 HTTP servers probed 200 times/s
# Results: bench/out/results.jsonl (one record per run), bench/out/RESULTS.md (table),
# logs of every supervisor in bench/out/logs/. Nothing else in the repository changes.
#
# Environment: BENCH_QUICK=1, BENCH_REPS_EXEC, BENCH_REPS_IDLE, BENCH_REPS_PROBE,
# BENCH_WINDOW (seconds), BENCH_N (containers, default 100), BENCH_PORT_BASE (31000),
# BENCH_SKIP="pebble supervisord ..." (peers to leave out), BENCH_ONLY="exec idle probe"
# BENCH_BASE=/path/to/an/older/tend (adds it as the peer tend-base, for before/after runs)
# (scenarios to run: 1, 2+3, 4), BENCH_CACHE (where pebble is built).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH 2>/dev/null || echo /root/go)/bin"
GO=${GO:-go}

QUICK=${BENCH_QUICK:-0}
if [[ $QUICK == 1 ]]; then
	REPS_EXEC=${BENCH_REPS_EXEC:-5}; REPS_IDLE=${BENCH_REPS_IDLE:-3}
	REPS_PROBE=${BENCH_REPS_PROBE:-1}; WINDOW=${BENCH_WINDOW:-10}
else
	REPS_EXEC=${BENCH_REPS_EXEC:-20}; REPS_IDLE=${BENCH_REPS_IDLE:-7}
	REPS_PROBE=${BENCH_REPS_PROBE:-3}; WINDOW=${BENCH_WINDOW:-30}
fi
N=${BENCH_N:-100}
PORT_BASE=${BENCH_PORT_BASE:-31000}
SKIP=" ${BENCH_SKIP:-} "
ONLY=" ${BENCH_ONLY:-exec idle probe} "
PEBBLE_VERSION=v1.19.0
CACHE=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend-bench}
TEND=$ROOT/bin/tend
OUT=$ROOT/bench/out
RESULTS=$OUT/results.jsonl
# `make bench` passes these to tend: its own log must stay out of the measurement.
TEND_FLAGS=(--log-format json --log-level warn)

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# --- cleanup: everything runs under benchctl (a subreaper that kills what it started);
# the trap only has to stop the benchctl that is running, by its pid.
WORK=$(mktemp -d /tmp/tend-bench.XXXXXX)
CUR=""
cleanup() {
	local rc=$?
	if [[ -n $CUR ]] && kill -0 "$CUR" 2>/dev/null; then
		kill -TERM "$CUR" 2>/dev/null || true
		wait "$CUR" 2>/dev/null || true
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

have() { [[ $SKIP != *" $1 "* && ($1 != tend-base || -n ${BENCH_BASE:-}) ]]; }

# --- tools -------------------------------------------------------------------------
[[ -x $TEND ]] || die "$TEND is missing: run 'make build' (or 'make bench')"
command -v "$GO" >/dev/null || die "go is not in PATH"
command -v timeout >/dev/null || die "timeout (coreutils) is missing"

apt_install() { # apt_install PKG...: best effort; a missing peer is skipped, not fatal
	[[ $(id -u) == 0 ]] && command -v apt-get >/dev/null || return 1
	log "apt-get install -y $*"
	{ timeout 300 apt-get install -y "$@" || { timeout 300 apt-get update && timeout 300 apt-get install -y "$@"; }; } \
		>"$WORK/apt.log" 2>&1 || { log "apt-get install $* failed (see below)"; tail -n 5 "$WORK/apt.log" >&2; return 1; }
}

need=()
command -v tini >/dev/null || need+=(tini)
command -v supervisord >/dev/null || need+=(supervisor)
command -v cc >/dev/null || need+=(gcc libc6-dev)
[[ ${#need[@]} == 0 ]] || apt_install "${need[@]}" || true
command -v cc >/dev/null || die "no C compiler for the stamp child (apt-get install gcc libc6-dev)"
command -v tini >/dev/null || { log "tini unavailable: skipped"; SKIP+=" tini "; }
command -v supervisord >/dev/null || { log "supervisord unavailable: skipped"; SKIP+=" supervisord "; }

# pebble: go install of a pinned version; the module proxy may refuse the version list
# that `go install pkg@version` consults for deprecations, so fall back to a throwaway
# module that requires the same pinned version.
PEBBLE=$CACHE/pebble-$PEBBLE_VERSION/pebble
if have pebble && [[ ! -x $PEBBLE ]]; then
	log "building pebble $PEBBLE_VERSION into $(dirname "$PEBBLE")"
	mkdir -p "$(dirname "$PEBBLE")"
	if ! CGO_ENABLED=0 GOBIN=$(dirname "$PEBBLE") timeout 600 "$GO" install \
		"github.com/canonical/pebble/cmd/pebble@$PEBBLE_VERSION" >"$WORK/pebble-build.log" 2>&1; then
		mod=$WORK/pebble-mod
		mkdir -p "$mod"
		printf 'module benchpebble\n\ngo 1.22\n\nrequire github.com/canonical/pebble %s\n' "$PEBBLE_VERSION" >"$mod/go.mod"
		printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/canonical/pebble/cmd/pebble"\n' >"$mod/tools.go"
		(cd "$mod" && GOFLAGS=-mod=mod timeout 600 "$GO" mod tidy &&
			CGO_ENABLED=0 GOFLAGS=-mod=mod timeout 600 "$GO" build -trimpath -o "$PEBBLE" github.com/canonical/pebble/cmd/pebble) \
			>>"$WORK/pebble-build.log" 2>&1 || { tail -n 5 "$WORK/pebble-build.log" >&2; log "pebble build failed: skipped"; SKIP+=" pebble "; }
	fi
fi

# helpers: benchctl (measures), benchhttpd (probe target), benchprober (the floor of
# scenario 4), stamp (scenario 1 child)
mkdir -p "$WORK/bin"
log "building helpers"
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/benchctl" ./bench/cmd/benchctl
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/benchhttpd" ./bench/cmd/benchhttpd
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/benchprober" ./bench/cmd/benchprober
cc -O2 -static -o "$WORK/bin/stamp" bench/stamp/stamp.c 2>/dev/null ||
	cc -O2 -o "$WORK/bin/stamp" bench/stamp/stamp.c # no static libc: dynamic (slower exec for every supervisor alike)
STAMP=$WORK/bin/stamp
HTTPD=$WORK/bin/benchhttpd

rm -rf "$OUT"
mkdir -p "$OUT/logs"
: >"$RESULTS"

# --- versions ----------------------------------------------------------------------
{
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r)"
	echo "- tend: $("$TEND" version 2>/dev/null | head -n 1) ($("$GO" version | awk '{print $3}'))"
	have tini && echo "- tini: $(tini --version 2>&1 | head -n 1)"
	have pebble && echo "- pebble: $("$PEBBLE" version --client 2>&1 | head -n 1) (built from source with the same Go)"
	have supervisord && echo "- supervisord: $(supervisord --version 2>&1 | head -n 1) (Debian package, $(python3 --version 2>&1))"
	echo "- mode: $([[ $QUICK == 1 ]] && echo quick || echo full); repetitions: launch $REPS_EXEC, idle $REPS_IDLE, probes $REPS_PROBE × ${WINDOW} s; containers: $N"
} >"$OUT/versions.md"
cat "$OUT/versions.md" >&2

# --- spec/config writers -------------------------------------------------------------
# write_tend DIR KIND: KIND is stamp | sleepN | httpdN (probed servers) | plainN (same, no probes)
write_tend() {
	local dir=$1 kind=$2 i p
	mkdir -p "$dir"
	{
		echo "containers:"
		case $kind in
		stamp) echo "  - {name: c1, command: [\"$STAMP\", \"$dir/stamp\"]}" ;;
		sleep*) for ((i = 1; i <= ${kind#sleep}; i++)); do echo "  - {name: c$i, command: [sleep, \"100000\"]}"; done ;;
		plain*) for ((i = 1; i <= ${kind#plain}; i++)); do echo "  - {name: c$i, command: [\"$HTTPD\", \"$((PORT_BASE + i))\"]}"; done ;;
		httpd*)
			local tl='time_limit: {initial_delay_ms: 2000, min_restart_period_ms: 1000, max_restart_period_ms: 1000, max_execution_time_ms: 1000}'
			for ((i = 1; i <= ${kind#httpd}; i++)); do
				p=$((PORT_BASE + i))
				echo "  - name: c$i"
				echo "    command: [\"$HTTPD\", \"$p\"]"
				echo "    liveness_probe: {http_get: {port: $p, path: /}, failure_threshold: 3, $tl}"
				echo "    readiness_probe: {http_get: {port: $p, path: /}, $tl}"
			done
			;;
		esac
	} >"$dir/spec.yaml"
}

write_pebble() {
	local dir=$1 kind=$2 i p
	mkdir -p "$dir/layers"
	{
		echo "services:"
		case $kind in
		stamp) echo "  c1: {override: replace, startup: enabled, command: \"$STAMP $dir/stamp\"}" ;;
		sleep*) for ((i = 1; i <= ${kind#sleep}; i++)); do echo "  c$i: {override: replace, startup: enabled, command: sleep 100000}"; done ;;
		plain*) for ((i = 1; i <= ${kind#plain}; i++)); do echo "  c$i: {override: replace, startup: enabled, command: \"$HTTPD $((PORT_BASE + i))\"}"; done ;;
		httpd*)
			for ((i = 1; i <= ${kind#httpd}; i++)); do
				echo "  c$i: {override: replace, startup: enabled, command: \"$HTTPD $((PORT_BASE + i))\", on-check-failure: {c$i-alive: restart}}"
			done
			echo "checks:"
			for ((i = 1; i <= ${kind#httpd}; i++)); do
				p=$((PORT_BASE + i))
				echo "  c$i-alive: {override: replace, level: alive, period: 1s, timeout: 1s, threshold: 3, http: {url: \"http://localhost:$p/\"}}"
				echo "  c$i-ready: {override: replace, level: ready, period: 1s, timeout: 1s, threshold: 1, http: {url: \"http://localhost:$p/\"}}"
			done
			;;
		esac
	} >"$dir/layers/001-bench.yaml"
}

write_supervisord() {
	local dir=$1 kind=$2 i
	mkdir -p "$dir"
	{
		printf '[supervisord]\nnodaemon=true\nlogfile=%s/supervisord.log\npidfile=%s/supervisord.pid\nloglevel=warn\n' "$dir" "$dir"
		printf '[unix_http_server]\nfile=%s/supervisor.sock\n' "$dir"
		case $kind in
		stamp) printf '[program:c1]\ncommand=%s %s/stamp\nstdout_logfile=/dev/null\nstderr_logfile=/dev/null\n' "$STAMP" "$dir" ;;
		sleep*) for ((i = 1; i <= ${kind#sleep}; i++)); do
			printf '[program:c%d]\ncommand=sleep 100000\nstdout_logfile=/dev/null\nstderr_logfile=/dev/null\n' "$i"
		done ;;
		esac
	} >"$dir/supervisord.conf"
}

# sup_cmd SUP DIR KIND: writes the config, sets CMD (argv) and ENVV (env assignments)
sup_cmd() {
	local sup=$1 dir=$2 kind=$3
	ENVV=()
	case $sup in
	direct) CMD=("$STAMP" "$dir/stamp"); mkdir -p "$dir" ;;
	tend) write_tend "$dir" "$kind"; CMD=("$TEND" run "${TEND_FLAGS[@]}" "$dir/spec.yaml") ;;
	tend-base) write_tend "$dir" "$kind"; CMD=("$BENCH_BASE" run "${TEND_FLAGS[@]}" "$dir/spec.yaml") ;;
	tini)
		mkdir -p "$dir"
		case $kind in
		stamp) CMD=(tini -- "$STAMP" "$dir/stamp") ;;
		*) CMD=(tini -- sleep 100000) ;;
		esac
		;;
	pebble) write_pebble "$dir" "$kind"; CMD=("$PEBBLE" run); ENVV=("PEBBLE=$dir") ;;
	supervisord) write_supervisord "$dir" "$kind"; CMD=(supervisord -c "$dir/supervisord.conf") ;;
	go-floor) mkdir -p "$dir"; CMD=("$WORK/bin/benchprober" -httpd "$HTTPD" -n "${kind#httpd}" -base "$PORT_BASE") ;;
	go-floor-ka) mkdir -p "$dir"; CMD=("$WORK/bin/benchprober" -httpd "$HTTPD" -n "${kind#httpd}" -base "$PORT_BASE" -keepalive) ;;
	esac
}

run_id=0
# one SCENARIO SUP KIND CTL_SUBCOMMAND LIMIT CTL_FLAGS...
one() {
	local scen=$1 sup=$2 kind=$3 sub=$4 limit=$5; shift 5
	run_id=$((run_id + 1))
	local dir=$WORK/$scen/$sup.$run_id
	sup_cmd "$sup" "$dir" "$kind"
	local flags=(-scenario "$scen" -sup "$sup" -out "$RESULTS" -log "$OUT/logs/$scen.$sup.$run_id.log")
	[[ $sub == launch ]] && flags+=(-stamp "$dir/stamp")
	CUR=""
	if [[ ${#ENVV[@]} -gt 0 ]]; then
		timeout -k 10 "$limit" env "${ENVV[@]}" "$WORK/bin/benchctl" "$sub" "${flags[@]}" "$@" -- "${CMD[@]}" \
			>>"$OUT/benchctl.out" 2>>"$OUT/benchctl.err" &
	else
		timeout -k 10 "$limit" "$WORK/bin/benchctl" "$sub" "${flags[@]}" "$@" -- "${CMD[@]}" \
			>>"$OUT/benchctl.out" 2>>"$OUT/benchctl.err" &
	fi
	CUR=$!
	local rc=0
	wait "$CUR" || rc=$?
	CUR=""
	if [[ $rc != 0 ]]; then
		log "  $scen/$sup run $run_id failed (rc $rc): $(tail -n 1 "$OUT/benchctl.err" 2>/dev/null)"
	fi
	rm -rf "$dir"
}

peers() { local s; for s in "$@"; do have "$s" && printf '%s ' "$s"; done; }

START=$(date +%s)

# --- 1. launch -> first exec ---------------------------------------------------------
[[ $ONLY == *" exec "* ]] && log "scenario 1: launch -> first exec, $REPS_EXEC repetitions"
for ((r = 1; r <= REPS_EXEC; r++)); do
	[[ $ONLY == *" exec "* ]] || break
	for sup in $(peers direct tend tend-base tini pebble supervisord); do
		one exec "$sup" stamp launch 60 -timeout 30s -stop-timeout 30s
	done
done

# --- 2 + 3. RSS and stop time, 1 and N sleeps -----------------------------------------
[[ $ONLY == *" idle "* ]] && log "scenarios 2-3: 1 sleep, $REPS_IDLE repetitions"
for ((r = 1; r <= REPS_IDLE; r++)); do
	[[ $ONLY == *" idle "* ]] || break
	for sup in $(peers tend tini pebble supervisord); do
		one idle1 "$sup" sleep1 run 90 -n 1 -comm sleep -settle 2s -start-timeout 30s -stop-timeout 30s
	done
done
[[ $ONLY == *" idle "* ]] && log "scenarios 2-3: $N sleeps, $REPS_IDLE repetitions"
for ((r = 1; r <= REPS_IDLE; r++)); do
	[[ $ONLY == *" idle "* ]] || break
	for sup in $(peers tend pebble supervisord); do
		one idle100 "$sup" "sleep$N" run 150 -n "$N" -comm sleep -settle 2s -start-timeout 60s -stop-timeout 45s
	done
done

# --- 4. probe cost ---------------------------------------------------------------------
# probe100: N servers, each probed by liveness + readiness every 1 s; plain100: the same
# servers without probes (the supervisor's baseline); go-floor(-ka): a bare Go program
# sending the same GETs with keep-alive off (as tend) or on (as pebble).
[[ $ONLY == *" probe "* ]] && log "scenario 4: $N HTTP servers x (liveness + readiness) every 1 s, ${WINDOW} s window, $REPS_PROBE repetitions"
probe_flags=(-n "$N" -comm benchhttpd -ports "$((PORT_BASE + 1))-$((PORT_BASE + N))" -settle 3s
	-window "${WINDOW}s" -start-timeout 60s -stop-timeout 45s)
for ((r = 1; r <= REPS_PROBE; r++)); do
	[[ $ONLY == *" probe "* ]] || break
	for sup in $(peers tend tend-base pebble go-floor go-floor-ka); do
		one probe100 "$sup" "httpd$N" run $((WINDOW + 150)) "${probe_flags[@]}"
	done
	for sup in $(peers tend tend-base pebble); do
		one plain100 "$sup" "plain$N" run $((WINDOW + 150)) "${probe_flags[@]}"
	done
done

ELAPSED=$(($(date +%s) - START))
{
	echo "## Results"
	echo
	cat "$OUT/versions.md"
	echo "- command: \`$([[ $QUICK == 1 ]] && echo 'BENCH_QUICK=1 ')make bench\` (measurements took ${ELAPSED} s)"
	echo
	"$WORK/bin/benchctl" summarize -in "$RESULTS"
} >"$OUT/RESULTS.md"
cat "$OUT/RESULTS.md"
log "done in ${ELAPSED} s; records in $RESULTS, table in $OUT/RESULTS.md"
