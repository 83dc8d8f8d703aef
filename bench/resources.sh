#!/usr/bin/env bash
# bench/resources.sh — a static resource download by tend against `curl -o`.
#
#   bash bench/resources.sh            # 1 GiB, 3 repetitions, interleaved
#   BENCH_SIZE_MB=256 BENCH_REPS=1 bash bench/resources.sh
#   BENCH_SUM=md5 bash bench/resources.sh     # the checksum tend verifies (sha256|md5|empty)
#
# A file of random bytes is served by python3's http.server on 127.0.0.1. Each
# repetition runs, in turn:
#   curl      curl -sS -o FILE URL
#   curl+sum  curl -o FILE URL && sha256sum FILE  (what a checksum costs as a second pass)
#   tend      tend run on a spec with the resource (SHA256 checksum) and one container
#             `true` (job mode: tend exits once it ran), so the wall time covers
#             the download, the hash on the way, fsync and the rename
#   tend-idle the same spec without the resource: tend's baseline RSS
# and records wall time and peak RSS (GNU time). Output: a markdown table on stdout
# and bench/out/resources.md. Nothing else in the repository changes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$PATH:/usr/local/go/bin"
SIZE_MB=${BENCH_SIZE_MB:-1024}
REPS=${BENCH_REPS:-3}
PORT=${BENCH_PORT:-31999}
SUMALG=${BENCH_SUM:-sha256}
case $SUMALG in
	sha256) PREFIX=SHA256 SUMTOOL=sha256sum ;;
	md5) PREFIX=MD5 SUMTOOL=md5sum ;;
	empty) PREFIX=EMPTY SUMTOOL=sha256sum ;; # tend checks nothing; the script still does
	*) echo "BENCH_SUM: sha256, md5 or empty" >&2; exit 2 ;;
esac
WORK=$(mktemp -d /var/tmp/tend-bench-res.XXXXXX)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

CGO_ENABLED=0 go build -trimpath -o "$WORK/tend" .
mkdir -p "$WORK/srv" bench/out
head -c $((SIZE_MB << 20)) /dev/urandom > "$WORK/srv/big.bin"
SUM=$("$SUMTOOL" "$WORK/srv/big.bin" | cut -d' ' -f1)
SPECSUM="$PREFIX:$SUM"
[[ $PREFIX == EMPTY ]] && SPECSUM="EMPTY:"
python3 -m http.server --bind 127.0.0.1 --directory "$WORK/srv" "$PORT" >/dev/null 2>&1 &
SERVER=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT/big.bin"

cat > "$WORK/res.yaml" <<YAML
instance: {name: bench, dir: $WORK/inst}
resources: [{name: big.bin, urls: ["$URL"], checksum: "$SPECSUM"}]
containers: [{name: done, command: ["true"], restart_policy: {mode: never}}]
YAML
cat > "$WORK/idle.yaml" <<YAML
instance: {name: bench, dir: $WORK/inst}
containers: [{name: done, command: ["true"], restart_policy: {mode: never}}]
YAML

# measure NAME CMD...: prints "NAME seconds maxrss_kib"
measure() {
	local name=$1; shift
	rm -rf "$WORK/inst" "$WORK/out.bin"; mkdir -p "$WORK/inst"
	sync
	/usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
	echo "$name $(cat "$WORK/time")"
}

: > "$WORK/results"
for rep in $(seq "$REPS"); do
	measure curl curl -sS -o "$WORK/out.bin" "$URL" >> "$WORK/results"
	measure curl+sum sh -c "curl -sS -o '$WORK/out.bin' '$URL' && $SUMTOOL '$WORK/out.bin'" >> "$WORK/results"
	measure tend "$WORK/tend" run --log-format json --listen "unix:$WORK/tend.sock" "$WORK/res.yaml" >> "$WORK/results"
	[[ $("$SUMTOOL" "$WORK/inst/big.bin" | cut -d' ' -f1) == "$SUM" ]] || { echo "tend's file is wrong" >&2; exit 1; }
	measure tend-idle "$WORK/tend" run --log-format json --listen "unix:$WORK/tend.sock" "$WORK/idle.yaml" >> "$WORK/results"
done

python3 - "$WORK/results" "$SIZE_MB" "$PREFIX" <<'PY' | tee bench/out/resources.md
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    name, secs, rss = line.split()
    rows.setdefault(name, []).append((float(secs), int(rss)))
size = int(sys.argv[2])
med = {k: (st.median(s for s, _ in v), max(r for _, r in v)) for k, v in rows.items()}
print(f"{size} MiB over loopback, checksum {sys.argv[3]}, {len(rows['tend'])} repetitions (median wall time, max peak RSS)\n")
print("| run | wall s | MiB/s | peak RSS MiB | vs curl |")
print("|---|---:|---:|---:|---:|")
for k in ["curl", "curl+sum", "tend", "tend-idle"]:
    s, r = med[k]
    rate = "" if k == "tend-idle" else f"{size / s:.0f}"
    rel = "" if k == "tend-idle" else f"{med['curl'][0] / s * 100:.0f} %"
    print(f"| {k} | {s:.2f} | {rate} | {r / 1024:.1f} | {rel} |")
print(f"\ntend RSS growth over its idle baseline: {(med['tend'][1] - med['tend-idle'][1]) / 1024:.1f} MiB")
PY
