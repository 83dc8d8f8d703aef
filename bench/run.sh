#!/usr/bin/env bash
# bench/run.sh — tend against the Go floor (bench/cmd/benchfloor), tini, dumb-init,
# pebble, process-compose and supervisord (see bench/README.md).
#
#   make bench                      # = make build && bash bench/run.sh
#   BENCH_QUICK=1 bash bench/run.sh # fewer repetitions, 10 s probe window
#   BENCH_ONLY=soak make bench      # the soak alone (not part of the default run)
#
# Scenarios (BENCH_ONLY words; every supervisor in the same run, repetitions interleaved):
#   oneshot    whole run of `X -- /bin/true`
#   exec       launch -> first container exec (static C child stamps CLOCK_MONOTONIC)
#   start50    launch -> the last of 50 stamp children exec'd; start1000: of 1000
#   restart    restart turnaround: a child that exits 1 at once, zero backoff
#   stop50     SIGTERM -> supervisor exit with 50 `sleep` children (and RSS with 50)
#   idle       anonymous memory (RssAnon), RSS, PSS and SIGTERM -> exit with 1 and 100 `sleep` containers
#   probe      supervisor CPU and RSS with 100 HTTP servers probed 200 times/s
#   soak       1000 containers, 1000 HTTP checks/s for BENCH_SOAK_SECONDS (300)
# Results: bench/out/results.jsonl (one record per run), bench/out/RESULTS.md (table),
# logs of every supervisor in bench/out/logs/. Nothing else in the repository changes.
#
# Environment: BENCH_QUICK=1, BENCH_REPS_EXEC, BENCH_REPS_IDLE, BENCH_REPS_PROBE,
# BENCH_WINDOW (seconds), BENCH_N (containers, default 100), BENCH_PORT_BASE (31000),
# BENCH_SKIP="pebble supervisord ..." (peers to leave out), BENCH_ONLY="exec idle ..."
# (scenarios to run, words above), BENCH_BASE=/path/to/an/older/tend (adds it as the peer
# tend-base, for before/after runs; its specs have `instance.cgroups: off` like tend's
# when it knows the key, and leave it out for a tend before 31d28ea+1), BENCH_CACHE (where pebble and process-compose are
# built), BENCH_PROCESS_COMPOSE=/path (use that binary instead of building one),
# BENCH_SOAK_SECONDS (300), BENCH_REPS_START, BENCH_REPS_RESTART.
# The cost curve from 1 to 1000 containers is bench/curve.sh (`make bench-curve`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/bench/lib.sh"
cd "$ROOT"
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH 2>/dev/null || echo /root/go)/bin"
GO=${GO:-go}

QUICK=${BENCH_QUICK:-0}
if [[ $QUICK == 1 ]]; then
	REPS_EXEC=${BENCH_REPS_EXEC:-5}; REPS_IDLE=${BENCH_REPS_IDLE:-3}
	REPS_PROBE=${BENCH_REPS_PROBE:-1}; WINDOW=${BENCH_WINDOW:-10}
	REPS_START=${BENCH_REPS_START:-3}; REPS_RESTART=${BENCH_REPS_RESTART:-1}
else
	REPS_EXEC=${BENCH_REPS_EXEC:-20}; REPS_IDLE=${BENCH_REPS_IDLE:-7}
	REPS_PROBE=${BENCH_REPS_PROBE:-3}; WINDOW=${BENCH_WINDOW:-30}
	REPS_START=${BENCH_REPS_START:-7}; REPS_RESTART=${BENCH_REPS_RESTART:-3}
fi
SOAK_SECONDS=${BENCH_SOAK_SECONDS:-300}
SOAK_N=1000    # containers, each with one HTTP liveness check a second
SOAK_SERVERS=10 # ports of the one benchhttpd they are checked against
N=${BENCH_N:-100}
PORT_BASE=${BENCH_PORT_BASE:-31000}
SKIP=" ${BENCH_SKIP:-} "
ONLY=" ${BENCH_ONLY:-oneshot exec start50 start1000 restart stop50 idle probe} "
only() { [[ $ONLY == *" $1 "* ]]; }
# pebble: the newest release the Go module proxy serves that builds with this Go (v1.19.0
# before issue 27). process-compose: the release issue 27 measured; the proxy serves no
# version list here, so "newest" cannot be asked for, and v1.104.0 was refused.
PEBBLE_VERSION=${BENCH_PEBBLE_VERSION:-v1.32.1}
PC_VERSION=${BENCH_PC_VERSION:-v1.103.0}
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
# A binary just built is dirty in the page cache until written back: written back now,
# every run is alike.
sync "$TEND" ${BENCH_BASE:+"$BENCH_BASE"} 2>/dev/null || true
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
command -v dumb-init >/dev/null || need+=(dumb-init)
command -v supervisord >/dev/null || need+=(supervisor)
command -v cc >/dev/null || need+=(gcc libc6-dev)
[[ ${#need[@]} == 0 ]] || apt_install "${need[@]}" || true
command -v cc >/dev/null || die "no C compiler for the stamp child (apt-get install gcc libc6-dev)"
command -v tini >/dev/null || { log "tini unavailable: skipped"; SKIP+=" tini "; }
command -v dumb-init >/dev/null || { log "dumb-init unavailable: skipped"; SKIP+=" dumb-init "; }
command -v supervisord >/dev/null || { log "supervisord unavailable: skipped"; SKIP+=" supervisord "; }

# go_build_pinned NAME MODULE VERSION PKG OUT: builds PKG of MODULE@VERSION into OUT from
# a throwaway module that requires the pinned version (the module proxy here refuses the
# version *list* that `go install pkg@version` reads for deprecation notices). On failure
# the peer NAME is skipped with the build's last lines, not fatal.
go_build_pinned() {
	local name=$1 module=$2 version=$3 pkg=$4 out=$5 mod=$WORK/$1-mod
	[[ -x $out ]] && return 0
	log "building $name $version into $(dirname "$out")"
	mkdir -p "$(dirname "$out")" "$mod"
	printf 'module bench%s\n\ngo 1.22\n\nrequire %s %s\n' "${name//-/}" "$module" "$version" >"$mod/go.mod"
	printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >"$mod/tools.go"
	if ! (cd "$mod" && GOFLAGS=-mod=mod timeout 600 "$GO" mod tidy &&
		CGO_ENABLED=0 GOFLAGS=-mod=mod timeout 600 "$GO" build -trimpath -ldflags '-s -w' -o "$out" "$pkg") \
		>"$WORK/$name-build.log" 2>&1; then
		tail -n 5 "$WORK/$name-build.log" >&2
		log "$name $version could not be built: skipped"
		SKIP+=" $name "
	fi
}
PEBBLE=$CACHE/pebble-$PEBBLE_VERSION/pebble
have pebble && go_build_pinned pebble github.com/canonical/pebble "$PEBBLE_VERSION" github.com/canonical/pebble/cmd/pebble "$PEBBLE"
# process-compose: the checksum database answers 404 for it here (the proxy has the
# module), so its sum is taken from the proxy alone (GONOSUMDB for that one module).
PC=${BENCH_PROCESS_COMPOSE:-$CACHE/process-compose-$PC_VERSION/process-compose}
have process-compose && GONOSUMDB=github.com/f1bonacc1/process-compose \
	go_build_pinned process-compose github.com/f1bonacc1/process-compose "$PC_VERSION" github.com/f1bonacc1/process-compose "$PC"

# helpers: benchctl (measures), benchhttpd (probe target), benchprober (the floor of
# scenario 4), stamp (scenario 1 child)
mkdir -p "$WORK/bin"
log "building helpers"
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/benchctl" ./bench/cmd/benchctl
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/benchhttpd" ./bench/cmd/benchhttpd
CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/benchprober" ./bench/cmd/benchprober
# the Go floor peer: built as tend is (static, -s -w), so the two differ only in what they do
CGO_ENABLED=0 "$GO" build -trimpath -ldflags '-s -w' -o "$WORK/bin/benchfloor" ./bench/cmd/benchfloor
FLOOR=$WORK/bin/benchfloor
# benchfloor-libs: the same program with every package tend's code imports linked in for
# its side effects (their init functions run, the runtime's tables grow with them), built
# with tend's tags: what any Go supervisor with tend's libraries pays whatever it does. The
# list is read from tend's sources on each run (`go list`), so it cannot go stale; the
# extra file is added with -overlay and never written into the tree.
{
	echo "package main"
	echo "import ("
	# shellcheck disable=SC2046 # one argument per package
	"$GO" list -tags urfave_cli_no_docs -f '{{join .Imports "\n"}}' $("$GO" list -tags urfave_cli_no_docs -deps . | grep '^github.com/tend-sh/tend') |
		grep -v '^github.com/tend-sh/tend' | sort -u | sed 's/.*/\t_ "&"/'
	echo ")"
} >"$WORK/floorlibs.go"
printf '{"Replace": {"%s": "%s"}}\n' "$ROOT/bench/cmd/benchfloor/zz_libs.go" "$WORK/floorlibs.go" >"$WORK/floorlibs.json"
CGO_ENABLED=0 "$GO" build -overlay "$WORK/floorlibs.json" -tags urfave_cli_no_docs -trimpath -ldflags '-s -w' \
	-o "$WORK/bin/benchfloor-libs" ./bench/cmd/benchfloor
cc -O2 -static -o "$WORK/bin/stamp" bench/stamp/stamp.c 2>/dev/null ||
	cc -O2 -o "$WORK/bin/stamp" bench/stamp/stamp.c # no static libc: dynamic (slower exec for every supervisor alike)
STAMP=$WORK/bin/stamp

# Every Go supervisor runs from a fresh copy (bench/lib.sh), tend-base too.
fresh_copy "$TEND" "$WORK/bin/tend" && TEND=$WORK/bin/tend
BASE_SRC=${BENCH_BASE:-}
[[ -n $BASE_SRC ]] && fresh_copy "$BASE_SRC" "$WORK/bin/tend-base" && BENCH_BASE=$WORK/bin/tend-base
fresh_copy "$FLOOR" "$WORK/bin/benchfloor.copy" && FLOOR=$WORK/bin/benchfloor.copy
[[ -x $WORK/bin/benchfloor-libs ]] && fresh_copy "$WORK/bin/benchfloor-libs" "$WORK/bin/benchfloor-libs"
[[ -x $PEBBLE ]] && fresh_copy "$PEBBLE" "$WORK/bin/pebble" && PEBBLE=$WORK/bin/pebble
[[ -x $PC ]] && fresh_copy "$PC" "$WORK/bin/process-compose" && PC=$WORK/bin/process-compose
sync "$WORK/bin" 2>/dev/null || true
HTTPD=$WORK/bin/benchhttpd

# Only this script's outputs: bench/curve.sh's (curve.*) stay.
rm -rf "$OUT/logs" "$RESULTS" "$OUT/RESULTS.md" "$OUT/versions.md" "$OUT/benchctl.out" "$OUT/benchctl.err"
mkdir -p "$OUT/logs"
: >"$RESULTS"

# A tend-base that knows instance.cgroups runs with it off, as tend does: left out, it
# would stop with cgroups and be measured on another path.
BASE_CGROUPS=0
if have tend-base; then
	printf 'instance: {cgroups: off}\ncontainers: [{name: c, command: [sleep, "1"]}]\n' >"$WORK/base-cgroups.yaml"
	"$BENCH_BASE" validate "$WORK/base-cgroups.yaml" >/dev/null 2>&1 && BASE_CGROUPS=1
fi

# --- versions ----------------------------------------------------------------------
{
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r)"
	echo "- tend: $("$TEND" version 2>/dev/null | head -n 1) ($("$GO" version | awk '{print $3}')); every Go binary run from a fresh copy (fresh_copy in bench/lib.sh)"
	have tend-base && echo "- tend-base: $BASE_SRC ($("$BENCH_BASE" version 2>/dev/null | head -n 1)), $([[ $BASE_CGROUPS == 1 ]] && echo "\`cgroups: off\` as tend" || echo "its default cgroups (it does not know \`instance.cgroups\`)")"
	echo "- benchfloor: bench/cmd/benchfloor (static Go, -s -w, same Go); benchfloor-libs: the same with the $(grep -c '^	_' "$WORK/floorlibs.go") packages tend imports linked in ($(stat -c %s "$WORK/bin/benchfloor-libs") bytes; tend $(stat -c %s "$TEND"))"
	have tini && echo "- tini: $(tini --version 2>&1 | head -n 1) (Debian package)"
	have dumb-init && echo "- dumb-init: $(dumb-init --version 2>&1 | head -n 1) (Debian package)"
	have pebble && echo "- pebble: $("$PEBBLE" version --client 2>&1 | head -n 1) (built from source with the same Go)"
	have process-compose && echo "- process-compose: $PC_VERSION ($PC; built from source with the same Go, -s -w)"
	have supervisord && echo "- supervisord: $(supervisord --version 2>&1 | head -n 1) (Debian package, $(python3 --version 2>&1))"
	echo "- mode: $([[ $QUICK == 1 ]] && echo quick || echo full); repetitions: one-shot and launch $REPS_EXEC, 50/1000 services $REPS_START/$((QUICK == 1 ? 1 : (REPS_START + 1) / 2)), restart $REPS_RESTART, idle and stop $REPS_IDLE, probes $REPS_PROBE × ${WINDOW} s; containers: $N"
} >"$OUT/versions.md"
cat "$OUT/versions.md" >&2

# --- spec/config writers -------------------------------------------------------------
# Kinds: true (one child /bin/true, no restart: the one-shot run) | stamp (one stamp child)
# | stampN (N stamp children, each its own file DIR/stamp.I) | crash (stamp -a: exits 1 at
# once, restarted with no backoff) | sleepN | httpdN (probed servers) | plainN (same, no
# probes) | soak (1000 sleeps, each with an HTTP check of its own path, + one server).

# write_tend DIR KIND [base]: base leaves out instance.cgroups when BENCH_BASE does
# not know the key (BASE_CGROUPS).
write_tend() {
	local dir=$1 kind=$2 base=${3:-} i p
	mkdir -p "$dir"
	{
		# cgroups off: no peer makes cgroups, and a cgroup per run would have to be removed
		[[ -z $base || $BASE_CGROUPS == 1 ]] && echo "instance: {cgroups: off}"
		echo "containers:"
		case $kind in
		true) echo "  - {name: c1, command: [/bin/true], restart_policy: {mode: never}}" ;;
		stamp) echo "  - {name: c1, command: [\"$STAMP\", \"$dir/stamp\"]}" ;;
		stamp*) for ((i = 1; i <= ${kind#stamp}; i++)); do echo "  - {name: c$i, command: [\"$STAMP\", \"$dir/stamp.$i\"]}"; done ;;
		crash) echo "  - {name: c1, command: [\"$STAMP\", -a, \"$dir/runs\"], restart_policy: {min_period_ms: 0, max_period_ms: 0, max_jitter_ms: 0, mode: always}}" ;;
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
		soak)
			# One server on SOAK_SERVERS ports; container I's check asks /p/I on port
			# BASE+1+(I mod SOAK_SERVERS), so the server sees each probe's own arrivals.
			echo "  - {name: srv, command: [\"$HTTPD\", \"$((PORT_BASE + 1))-$((PORT_BASE + SOAK_SERVERS))\"]}"
			local tl='time_limit: {initial_delay_ms: 3000, min_restart_period_ms: 1000, max_restart_period_ms: 1000, max_execution_time_ms: 1000}'
			for ((i = 1; i <= SOAK_N; i++)); do
				p=$((PORT_BASE + 1 + i % SOAK_SERVERS))
				echo "  - {name: c$i, command: [sleep, \"100000\"], liveness_probe: {http_get: {port: $p, path: /p/$i}, failure_threshold: 3, $tl}}"
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
		stamp*) for ((i = 1; i <= ${kind#stamp}; i++)); do echo "  c$i: {override: replace, startup: enabled, command: \"$STAMP $dir/stamp.$i\"}"; done ;;
		# backoff-delay 0 stays 0 (each next delay is delay × factor); exits before
		# pebble's 1 s "okay delay" are restarted all the same
		crash) echo "  c1: {override: replace, startup: enabled, command: \"$STAMP -a $dir/runs\", on-failure: restart, backoff-delay: 0s, backoff-factor: 1}" ;;
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

# process-compose: `entrypoint` (argv, no shell) so that its children are the same
# processes as everybody else's; `command` would start each under `bash -c`.
write_pc() {
	local dir=$1 kind=$2 i
	mkdir -p "$dir"
	{
		echo "version: \"0.5\""
		echo "processes:"
		case $kind in
		true) echo "  c1: {entrypoint: [/bin/true], availability: {restart: \"no\", exit_on_end: true}}" ;;
		stamp) echo "  c1: {entrypoint: [\"$STAMP\", \"$dir/stamp\"]}" ;;
		stamp*) for ((i = 1; i <= ${kind#stamp}; i++)); do echo "  c$i: {entrypoint: [\"$STAMP\", \"$dir/stamp.$i\"]}"; done ;;
		# backoff_seconds below 1 is taken as 1 (process.go getBackoff)
		crash) echo "  c1: {entrypoint: [\"$STAMP\", -a, \"$dir/runs\"], availability: {restart: always, backoff_seconds: 0}}" ;;
		sleep*) for ((i = 1; i <= ${kind#sleep}; i++)); do echo "  c$i: {entrypoint: [sleep, \"100000\"]}"; done ;;
		esac
	} >"$dir/pc.yaml"
}

write_supervisord() {
	local dir=$1 kind=$2 i
	mkdir -p "$dir"
	{
		printf '[supervisord]\nnodaemon=true\nlogfile=%s/supervisord.log\npidfile=%s/supervisord.pid\nloglevel=warn\n' "$dir" "$dir"
		printf '[unix_http_server]\nfile=%s/supervisor.sock\n' "$dir"
		case $kind in
		stamp) printf '[program:c1]\ncommand=%s %s/stamp\nstdout_logfile=/dev/null\nstderr_logfile=/dev/null\n' "$STAMP" "$dir" ;;
		stamp*) for ((i = 1; i <= ${kind#stamp}; i++)); do
			printf '[program:c%d]\ncommand=%s %s/stamp.%d\nstdout_logfile=/dev/null\nstderr_logfile=/dev/null\n' "$i" "$STAMP" "$dir" "$i"
		done ;;
		sleep*) for ((i = 1; i <= ${kind#sleep}; i++)); do
			printf '[program:c%d]\ncommand=sleep 100000\nstdout_logfile=/dev/null\nstderr_logfile=/dev/null\n' "$i"
		done ;;
		esac
	} >"$dir/supervisord.conf"
}

# child_argv KIND: the one child of a single-child init (benchfloor, tini, dumb-init).
# sleepN with N > 1 is a shell that starts N sleeps in its process group and waits: tini
# runs with -g and dumb-init (by default) forward SIGTERM to that whole group.
child_argv() {
	local dir=$1 kind=$2
	case $kind in
	true) CHILD=(/bin/true) ;;
	stamp) CHILD=("$STAMP" "$dir/stamp") ;;
	sleep1) CHILD=(sleep 100000) ;;
	sleep*) CHILD=(sh -c "for i in \$(seq ${kind#sleep}); do sleep 100000 & done; wait") ;;
	esac
}

# floor_argv DIR KIND [BIN]: benchfloor (or BIN) with the one child of child_argv, or
# (stampN, sleepN with N > 1) its -n N form: N children, each in its own process group,
# as a supervisor of N services starts them, all signalled and reaped at the stop.
floor_argv() {
	local dir=$1 kind=$2 FLOOR=${3:-$FLOOR}
	case $kind in
	stamp[0-9]*) CMD=("$FLOOR" -n "${kind#stamp}" "$STAMP" "$dir/stamp.{}") ;;
	sleep1) child_argv "$dir" "$kind"; CMD=("$FLOOR" "${CHILD[@]}") ;;
	sleep*) CMD=("$FLOOR" -n "${kind#sleep}" sleep 100000) ;;
	*) child_argv "$dir" "$kind"; CMD=("$FLOOR" "${CHILD[@]}") ;;
	esac
}

# sup_cmd SUP DIR KIND: writes the config, sets CMD (argv) and ENVV (env assignments)
sup_cmd() {
	local sup=$1 dir=$2 kind=$3
	ENVV=()
	mkdir -p "$dir"
	case $sup in
	direct) CMD=("$STAMP" "$dir/stamp") ;;
	tend) write_tend "$dir" "$kind"; CMD=("$TEND" run "${TEND_FLAGS[@]}" "$dir/spec.yaml") ;;
	tend-base) write_tend "$dir" "$kind" base; CMD=("$BENCH_BASE" run "${TEND_FLAGS[@]}" "$dir/spec.yaml") ;;
	benchfloor) floor_argv "$dir" "$kind" ;;
	benchfloor-libs) floor_argv "$dir" "$kind" "$WORK/bin/benchfloor-libs" ;;
	tini) child_argv "$dir" "$kind"; CMD=(tini -g -- "${CHILD[@]}") ;;
	dumb-init) child_argv "$dir" "$kind"; CMD=(dumb-init "${CHILD[@]}") ;;
	pebble) write_pebble "$dir" "$kind"; CMD=("$PEBBLE" run); ENVV=("PEBBLE=$dir") ;;
	# no TUI, no HTTP server (it would listen on port 8080), its log in the run's directory
	process-compose) write_pc "$dir" "$kind"; CMD=("$PC" up -f "$dir/pc.yaml" --tui=false --no-server -L "$dir/pc.log") ;;
	supervisord) write_supervisord "$dir" "$kind"; CMD=(supervisord -c "$dir/supervisord.conf") ;;
	go-floor) CMD=("$WORK/bin/benchprober" -httpd "$HTTPD" -n "${kind#httpd}" -base "$PORT_BASE") ;;
	go-floor-ka) CMD=("$WORK/bin/benchprober" -httpd "$HTTPD" -n "${kind#httpd}" -base "$PORT_BASE" -keepalive) ;;
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
	[[ $sub == restarts ]] && flags+=(-file "$dir/runs")
	CUR=""
	timeout -k 10 "$limit" env "${ENVV[@]}" "$WORK/bin/benchctl" "$sub" "${flags[@]}" "$@" -- "${CMD[@]}" \
		>>"$OUT/benchctl.out" 2>>"$OUT/benchctl.err" &
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

# --- one-shot: launch -> exit of `X -- /bin/true` ---------------------------------------
# pebble has no one-shot form (`pebble run` does not exit when its services do); supervisord neither.
only oneshot && log "one-shot X -- /bin/true, $REPS_EXEC repetitions"
for ((r = 1; r <= REPS_EXEC; r++)); do
	only oneshot || break
	for sup in $(peers benchfloor benchfloor-libs tend tend-base tini dumb-init process-compose); do
		one oneshot "$sup" true oneshot 60 -timeout 30s
	done
done

# --- launch -> first exec ---------------------------------------------------------------
only exec && log "launch -> first exec, $REPS_EXEC repetitions"
for ((r = 1; r <= REPS_EXEC; r++)); do
	only exec || break
	for sup in $(peers direct benchfloor benchfloor-libs tend tend-base tini dumb-init pebble process-compose supervisord); do
		one exec "$sup" stamp launch 60 -timeout 30s -stop-timeout 30s
	done
done

# --- N services: launch -> the last of N stamp children exec'd ------------------------------
only start50 && log "50 services: launch -> last exec, $REPS_START repetitions"
for ((r = 1; r <= REPS_START; r++)); do
	only start50 || break
	for sup in $(peers benchfloor tend tend-base pebble process-compose supervisord); do
		one start50 "$sup" stamp50 launch 90 -n 50 -timeout 60s -stop-timeout 30s
	done
done
# 1000: supervisord is left out (12 s to start them, 8 s to stop them, per run), and
# pebble's stop is cut short at 10 s (it takes longer than 45 s to stop 1000 services;
# the table notes the SIGKILL).
REPS_1000=$((QUICK == 1 ? 1 : (REPS_START + 1) / 2))
only start1000 && log "1000 services: launch -> last exec, $REPS_1000 repetitions"
for ((r = 1; r <= REPS_1000; r++)); do
	only start1000 || break
	for sup in $(peers benchfloor tend tend-base pebble process-compose); do
		one start1000 "$sup" stamp1000 launch 120 -n 1000 -timeout 60s -stop-timeout 10s
	done
done

# --- restart turnaround -------------------------------------------------------------------
# 50 restarts after the first 5; process-compose waits at least 1 s before each, so it
# gets 3 after the first one (its figure is that second, not noise).
only restart && log "restart turnaround, $REPS_RESTART repetitions"
for ((r = 1; r <= REPS_RESTART; r++)); do
	only restart || break
	for sup in $(peers tend tend-base pebble process-compose); do
		case $sup in
		process-compose) one restart "$sup" crash restarts 60 -skip 1 -count 3 -timeout 30s ;;
		*) one restart "$sup" crash restarts 60 -skip 5 -count 50 -timeout 30s ;;
		esac
	done
done

# --- SIGTERM -> exit with 50 children (and RSS with 50) -------------------------------------
only stop50 && log "SIGTERM -> exit with 50 sleeps, $REPS_IDLE repetitions"
for ((r = 1; r <= REPS_IDLE; r++)); do
	only stop50 || break
	for sup in $(peers benchfloor tend tend-base tini dumb-init pebble process-compose supervisord); do
		one stop50 "$sup" sleep50 run 120 -n 50 -comm sleep -settle 1s -start-timeout 60s -stop-timeout 45s
	done
done

# --- RSS and stop time, 1 and N sleeps ----------------------------------------------------
only idle && log "idle: 1 sleep, $REPS_IDLE repetitions"
for ((r = 1; r <= REPS_IDLE; r++)); do
	only idle || break
	for sup in $(peers benchfloor tend tend-base tini dumb-init pebble process-compose supervisord); do
		one idle1 "$sup" sleep1 run 90 -n 1 -comm sleep -settle 2s -start-timeout 30s -stop-timeout 30s
	done
done
only idle && log "idle: $N sleeps, $REPS_IDLE repetitions"
for ((r = 1; r <= REPS_IDLE; r++)); do
	only idle || break
	for sup in $(peers benchfloor tend tend-base pebble process-compose supervisord); do
		one idle100 "$sup" "sleep$N" run 150 -n "$N" -comm sleep -settle 2s -start-timeout 60s -stop-timeout 45s
	done
done

# --- probe cost ---------------------------------------------------------------------------
# probe100: N servers, each probed by liveness + readiness every 1 s; plain100: the same
# servers without probes (the supervisor's baseline); go-floor(-ka): a bare Go program
# sending the same GETs with keep-alive off or on.
only probe && log "probes: $N HTTP servers x (liveness + readiness) every 1 s, ${WINDOW} s window, $REPS_PROBE repetitions"
probe_flags=(-n "$N" -comm benchhttpd -ports "$((PORT_BASE + 1))-$((PORT_BASE + N))" -settle 3s
	-window "${WINDOW}s" -start-timeout 60s -stop-timeout 45s)
for ((r = 1; r <= REPS_PROBE; r++)); do
	only probe || break
	for sup in $(peers tend tend-base pebble go-floor go-floor-ka); do
		one probe100 "$sup" "httpd$N" run $((WINDOW + 150)) "${probe_flags[@]}"
	done
	for sup in $(peers tend tend-base pebble); do
		one plain100 "$sup" "plain$N" run $((WINDOW + 150)) "${probe_flags[@]}"
	done
done

# --- soak: 1000 containers, 1000 HTTP checks a second ------------------------------------
# Not in the default run. The window starts after all 1000 sleeps run, the server answers
# and 10 s more (the checks start 3 s after their container); RSS is read 1 min into it.
if only soak; then
	log "soak: $SOAK_N containers x 1 HTTP check/s, ${SOAK_SECONDS} s window"
	for sup in $(peers tend tend-base); do
		one soak "$sup" soak run $((SOAK_SECONDS + 300)) -n "$SOAK_N" -comm sleep -gaps-port "$((PORT_BASE + 1))" \
			-period-ms 1000 -settle 10s -window "${SOAK_SECONDS}s" -rss-at 60s -start-timeout 120s -stop-timeout 60s
	done
fi

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
