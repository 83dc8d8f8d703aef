#!/usr/bin/env bash
# bench/top.sh — what `tend top` costs: tend's own CPU with no viewer, after one
# status read (the usage sampling a viewer turns on, alone), with one viewer and with
# twelve viewers attached (each in a tmux terminal of its own), the viewer's CPU and
# RSS; an instance of N `sleep` containers (bench/README.md "tend top").
#
#   bash bench/top.sh            # bin/tend, N=100, 30 s windows, 2 rounds
#   TEND=/path/tend N=100 WINDOW=30 ROUNDS=2 bash bench/top.sh
#
# As root on a host with writable cgroup v1 hierarchies tend runs in a fresh cgroup of
# its own (removed after); elsewhere with cgroups off. Needs tmux.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/bench/lib.sh"
TEND=${TEND:-$ROOT/bin/tend}
N=${N:-100}
WINDOW=${WINDOW:-30}
ROUNDS=${ROUNDS:-2}
VIEWERS=${VIEWERS:-12}
WORK=$(mktemp -d /tmp/tend-bench-top.XXXXXX)
fresh_copy "$TEND" "$WORK/tend" && TEND=$WORK/tend # as installed (bench/lib.sh)
SOCK=$WORK/tmux
HZ=$(getconf CLK_TCK)

cgroups=off
cgdirs=()
if [[ $(id -u) == 0 && -w /sys/fs/cgroup/memory && ! -e /sys/fs/cgroup/cgroup.controllers ]]; then
	cgroups=auto
fi
{
	echo "instance: {name: bench-top, cgroups: $cgroups}"
	echo "containers:"
	for ((i = 1; i <= N; i++)); do printf '  - {name: s%03d, command: sleep 100000}\n' "$i"; done
} >"$WORK/spec.yaml"

tend_pid=""
cleanup() {
	for ((v = 0; v <= VIEWERS; v++)); do tmux -S "$SOCK-$v" kill-server 2>/dev/null || true; done
	if [[ -n $tend_pid ]]; then
		kill -TERM "$tend_pid" 2>/dev/null || true
		while kill -0 "$tend_pid" 2>/dev/null; do sleep 0.1; done
	fi
	local d
	for d in "${cgdirs[@]}"; do rmdir "$d"/containers/* "$d"/containers "$d" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

# A fresh cgroup in every hierarchy tend uses, joined by the subshell that starts tend.
start_tend() {
	local h own d
	if [[ $cgroups == auto ]]; then
		for h in cpu cpuacct memory pids freezer unified; do
			if [[ $h == unified ]]; then
				own=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup); d=/sys/fs/cgroup/unified$own/bench-top-$$
			else
				own=$(awk -F: -v h="$h" '{n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == h) print $3}' /proc/self/cgroup)
				d=/sys/fs/cgroup/$h$own/bench-top-$$
			fi
			[[ -d ${d%/*} ]] && mkdir -p "$d" && cgdirs+=("$d")
		done
	fi
	(
		for d in "${cgdirs[@]}"; do echo $BASHPID >"$d/cgroup.procs"; done
		exec "$TEND" run --log-level warn "$WORK/spec.yaml" >"$WORK/tend.log" 2>&1
	) &
	tend_pid=$!
	# --ready asks GET /v1/ready, which (unlike the status) does not start the sampling
	# of every container's usage.
	local deadline=$((SECONDS + 60))
	until "$TEND" status --ready --listen "unix:$WORK/tend.sock" 2>/dev/null; do
		((SECONDS < deadline)) || { echo "tend did not start $N containers in 60 s" >&2; exit 1; }
		sleep 0.2
	done
}

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# viewers K: start K viewers (tmux sessions 1..K), each `tend top` in 100x30.
viewers() {
	local v
	for ((v = 1; v <= $1; v++)); do
		tmux -S "$SOCK-$v" -f /dev/null new-session -d -x 100 -y 30 "exec env TERM=xterm-256color $TEND top --listen unix:$WORK/tend.sock"
	done
	sleep 3 # the viewers draw their first screens; not a measurement
}
# The socket goes with its server: a viewer started next must not reach a server still
# on its way out ("server exited unexpectedly").
unview() { local v; for ((v = 1; v <= VIEWERS; v++)); do tmux -S "$SOCK-$v" kill-server 2>/dev/null || true; rm -f "$SOCK-$v"; done; }
viewer_pid() { tmux -S "$SOCK-$1" list-panes -F '#{pane_pid}'; }

# window LABEL: tend's CPU (and viewer 1's, if any) over WINDOW seconds.
window() {
	local label=$1 t0 t1 v0="" v1 vp=""
	vp=$(viewer_pid 1 2>/dev/null || true)
	t0=$(ticks "$tend_pid")
	[[ -n $vp ]] && v0=$(ticks "$vp")
	sleep "$WINDOW"
	t1=$(ticks "$tend_pid")
	local line
	line=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v w="$WINDOW" -v l="$label" \
		'BEGIN {printf "%-12s tend CPU %5.2f %% of a core", l, (b - a) / hz / w * 100}')
	if [[ -n $vp ]]; then
		v1=$(ticks "$vp")
		line+=$(awk -v a="$v0" -v b="$v1" -v hz="$HZ" -v w="$WINDOW" -v r="$(rss_kib "$vp")" \
			'BEGIN {printf "   viewer CPU %5.2f %%, RSS %.1f MiB", (b - a) / hz / w * 100, r / 1024}')
	fi
	echo "$line"
}

echo "tend top on $N containers: $TEND ($(stat -c %s "$TEND") bytes), cgroups $cgroups, ${WINDOW}s windows, $(nproc) CPUs, $(date -u +%FT%TZ)"
start_tend
sleep 5
for ((r = 1; r <= ROUNDS; r++)); do
	window "none"
	# One status read: tend samples every container's usage for the next minute, as it
	# does while a viewer looks; the window shows that sampling alone.
	"$TEND" status --listen "unix:$WORK/tend.sock" >/dev/null
	window "sampling"
	viewers 1
	window "1 viewer"
	unview
	viewers "$VIEWERS"
	window "$VIEWERS viewers"
	unview
	# tend samples every container for a minute after the last read of the usage.
	((r < ROUNDS)) && sleep 65
done
