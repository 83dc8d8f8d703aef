#!/usr/bin/env bash
# bench/revisions.sh — the figures of revisions (docs/reference.md "Updates and rollback").
#
#   bash bench/revisions.sh                 # 50 containers, a 100 MiB resource, 20 kept revisions
#   BENCH_N=50 BENCH_SIZE_MB=100 BENCH_KEPT=20 bash bench/revisions.sh
#
# One tend (cgroups off) runs an instance of BENCH_N containers (`sleep`, ready when
# running) and a BENCH_SIZE_MB resource served by python3's http.server on 127.0.0.1,
# whose log counts the GETs. It prints:
#   rollback      wall time of `tend rollback` (command → the old revision active and
#                 ready) after an update that changed one container's env, beside
#                 `tend restart` of that container (its restart turnaround), and the
#                 GETs the rollback made
#   auto          wall time of `tend apply` of a revision one container of which is
#                 never ready, with rollback_after 1s, until it exits (rolled back) and
#                 the old revision is ready again, less the 1s: what the automatic
#                 rollback adds to rollback_after (includes the install and activation)
#   install       wall time of `tend apply --no-wait` of a revision (activate: manual)
#                 whose resource has the checksum of the one in place, and its GETs
#   memory        tend's anonymous memory (smaps_rollup) before and after BENCH_KEPT
#                 more kept revisions (activate: manual), per revision
# Nothing in the repository changes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$PATH:/usr/local/go/bin"
N=${BENCH_N:-50}
SIZE_MB=${BENCH_SIZE_MB:-100}
KEPT=${BENCH_KEPT:-20}
PORT=${BENCH_PORT:-31998}
WORK=$(mktemp -d /var/tmp/tend-bench-rev.XXXXXX)
TEND_PID=
cleanup() {
	[[ -n $TEND_PID ]] && kill "$TEND_PID" 2>/dev/null && wait "$TEND_PID" 2>/dev/null
	kill "$SERVER" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

CGO_ENABLED=0 go build -trimpath -o "$WORK/tend" .
T="$WORK/tend"
mkdir -p "$WORK/srv" "$WORK/inst"
head -c $((SIZE_MB << 20)) /dev/urandom > "$WORK/srv/big.bin"
SUM="MD5:$(md5sum "$WORK/srv/big.bin" | cut -d' ' -f1)"
python3 -m http.server --bind 127.0.0.1 --directory "$WORK/srv" "$PORT" 2> "$WORK/http.log" >/dev/null &
SERVER=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
gets() { grep -c 'GET /big.bin' "$WORK/http.log" || true; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# spec ID [c0's env value] [extra instance fields] [c0's readiness]
spec() {
	local id=$1 v=${2:-1} extra=${3:-} ready=${4:-}
	echo "instance: {name: bench, dir: $WORK/inst, cgroups: off, revision: $id, keep_revisions: 1000$extra}"
	echo "resources: [{name: big.bin, urls: [\"http://127.0.0.1:$PORT/big.bin\"], checksum: \"$SUM\"}]"
	echo "containers:"
	for i in $(seq 0 $((N - 1))); do
		if [[ $i == 0 ]]; then
			echo "  - {name: c0, command: [sleep, \"100000\"], env: [{name: V, value: \"$v\"}]$ready}"
		else
			echo "  - {name: c$i, command: [sleep, \"100000\"]}"
		fi
	done
}
ctl() { "$T" "$@" --listen "unix:$WORK/tend.sock"; }
ready() { # waits until revision $1 is active and ready
	for _ in $(seq 2000); do
		curl -sf --unix-socket "$WORK/tend.sock" http://tend/v1/status | grep -q "\"revision\":\"$1\",\"state\":\"running\".*\"ready\":{\"status\":\"True\"" && return 0
		sleep 0.01
	done
	echo "revision $1 never ready" >&2; exit 1
}
# span MESSAGE [CONTAINER]: ms in tend's log from the last line with MESSAGE (of
# CONTAINER) to c0's next "started".
span() {
	python3 - "$WORK/tend.log" "$1" "${2:-}" <<'PY'
import json, sys
from datetime import datetime
at = lambda d: datetime.fromisoformat(d["time"].replace("Z", "+00:00"))
begin, out = None, "?"
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("message") == sys.argv[2] and d.get("container", "") == sys.argv[3]:
        begin, out = at(d), "?"
    elif begin and out == "?" and d.get("container") == "c0" and d.get("message") == "started":
        out = round((at(d) - begin).total_seconds() * 1000, 1)
print(out)
PY
}
anon() { awk '/^Anonymous:/ {print $2}' "/proc/$TEND_PID/smaps_rollup"; }

spec v1 > "$WORK/spec.yaml"
"$T" run --listen "unix:$WORK/tend.sock" --log-level info --log-format json "$WORK/spec.yaml" > "$WORK/tend.log" 2>&1 &
TEND_PID=$!
ready v1
sleep 0.5 # v1's resource is linked into its store once ready

# rollback: v2 changes c0's env; then tend rollback back to v1.
spec v2 2 > "$WORK/v2.yaml"
ctl apply "$WORK/v2.yaml" > /dev/null
ready v2
sleep 0.5
t0=$(date +%s%N); ctl restart c0 > /dev/null; t1=$(date +%s%N)
ready v2
sleep 0.2
restart_in=$(span stopping c0)
before=$(gets)
r0=$(date +%s%N); ctl rollback > /dev/null; r1=$(date +%s%N)
sleep 0.2
echo "rollback: tend rollback of $N containers, one changed: $(ms "$r0" "$r1") ms by the command (it polls every 100 ms), $(span "rollback requested") ms in tend (requested → c0 started); tend restart c0: $(ms "$t0" "$t1") ms, $restart_in ms in tend (c0 stopping → started); GETs: $(( $(gets) - before ))"

# auto: v3's c0 never ready, rollback_after 1s.
spec v3 3 ", rollback_after: 1s" ", readiness_probe: {exec: {command: \"false\"}, period: 50ms, initial_delay: 0s}" > "$WORK/v3.yaml"
a0=$(date +%s%N); ctl apply "$WORK/v3.yaml" > /dev/null 2>&1 || true; ready v1; a1=$(date +%s%N)
sleep 0.2
echo "auto: apply of a bad revision until the old one is ready again: $(ms "$a0" "$a1") ms by the command, of which rollback_after 1000 ms; $(span "rolling back: the revision was not ready in time") ms in tend (rollback_after expired → c0 started)"

# install: a revision whose resource (another name, same checksum) is in place.
spec v4 4 ", activate: manual" | sed "s/name: big.bin/name: big2.bin/" > "$WORK/v4.yaml"
before=$(gets)
i0=$(date +%s%N); ctl apply --no-wait "$WORK/v4.yaml" > /dev/null; i1=$(date +%s%N)
inside=$(python3 - "$WORK/tend.log" <<'PY'
import json, sys
from datetime import datetime
t = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("revision") == "v4" and d.get("message") in ("installing revision", "revision installed"):
        t[d["message"]] = datetime.fromisoformat(d["time"].replace("Z", "+00:00"))
print(round((t["revision installed"] - t["installing revision"]).total_seconds() * 1000, 1))
PY
)
echo "install: apply --no-wait of a revision whose ${SIZE_MB} MiB resource is in place: $(ms "$i0" "$i1") ms by the command, ${inside} ms in tend (installing → installed); GETs: $(( $(gets) - before ))"

# memory: KEPT more kept revisions.
m0=$(anon)
for k in $(seq 1 "$KEPT"); do
	spec "m$k" "m$k" ", activate: manual" > "$WORK/m.yaml"
	ctl apply --no-wait "$WORK/m.yaml" > /dev/null
done
sleep 1
m1=$(anon)
echo "memory: anonymous ${m0} KiB → ${m1} KiB after $KEPT more kept revisions: $(( (m1 - m0) / KEPT )) KiB per revision"
