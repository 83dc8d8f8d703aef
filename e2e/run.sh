#!/usr/bin/env bash
# make e2e: tend as PID 1 of real containers under podman and runc. Builds the images
# of the Dockerfile and checks the example instance (ready, --watch, SIGHUP, a stop
# by its stop policies inside the grace period), reaping of orphans, and
# `podman kube play` of examples/kubernetes. Everything it creates (containers, pod,
# volumes, images) is removed at the end, also on failure. It fails, never skips,
# when podman cannot run a container here.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/e2e/containers.conf}"

RUN="e2e-$$"                         # tag and name part of everything this run creates
IMAGE=localhost/tend
EXAMPLE="$IMAGE-example:$RUN"
CTR="tend-$RUN"                      # the example instance under podman run
ORPHANS="tend-$RUN-orphans"
CG="tend-$RUN-cgroups"
POD=tend-example-pod-0               # podman kube play: <deployment>-pod-0
POD_CTR="$POD-tend"
TMP="$(mktemp -d /tmp/tend-e2e.XXXXXX)"
STARTED=$(date +%s)

log() { printf '%s e2e: %s\n' "$(date +%T.%3N)" "$*"; }
fail() {
	log "FAIL: $*"
	exit 1
}
now_ms() { date +%s%3N; }
# The image has a HEALTHCHECK, and podman schedules health checks with systemd
# timers: without systemd (a CI sandbox) it logs errors at every container start and
# stop, which change nothing here (`podman healthcheck run` still works).
podman() { command podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }

# waitfor SECONDS WHAT CMD...: poll CMD until it succeeds. CMD is run anew each
# time: a function, not a "$(...)" that the call would expand once.
waitfor() {
	local secs=$1 what=$2
	shift 2
	local deadline=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${secs}s waiting for $what"
		sleep 0.2
	done
}

command -v podman >/dev/null || fail "podman is not installed (apt-get install podman runc catatonit)"
had_pause=$(podman images -q --filter reference=localhost/podman-pause)
documented= # set while the container of the documented podman run line may exist
tagged_latest= # set once localhost/tend-example:latest is this run's image
played= # set once podman kube play may have created the pod and its volume
cleanup() {
	local code=$?
	set +e
	if [ "$code" -ne 0 ]; then
		for c in "$CTR" "$ORPHANS" "$CG" "$POD_CTR"; do
			podman container exists "$c" 2>/dev/null || continue
			log "last output of $c:"
			podman logs --tail 40 "$c" 2>&1 | sed 's/^/    /'
		done
	fi
	for c in "$CTR" "$ORPHANS" "$CG"; do # one by one, so that one already gone cannot spare the others
		podman rm -f -t 0 "$c" >/dev/null 2>&1
	done
	if [ -n "$played" ]; then
		podman kube down examples/kubernetes/deployment.yaml >/dev/null 2>&1
		podman pod rm -f -t 0 "$POD" >/dev/null 2>&1
		podman volume rm -f tend-example-spec tend-run >/dev/null 2>&1
	fi
	if [ -n "$tagged_latest" ]; then
		podman untag localhost/tend-example:latest >/dev/null 2>&1
		[ -n "$saved_latest" ] && podman tag "$saved_latest" localhost/tend-example:latest
	fi
	[ -n "$documented" ] && podman rm -f -t 0 tend-example >/dev/null 2>&1
	podman rmi -f "$IMAGE:$RUN" "$EXAMPLE" >/dev/null 2>&1
	# podman builds its pause image on the first kube play; remove it if we made it.
	[ -z "$had_pause" ] && podman rmi -f $(podman images -q --filter reference=localhost/podman-pause) >/dev/null 2>&1
	rm -rf "$TMP"
	if [ "$code" -eq 0 ]; then
		log "PASS in $(($(date +%s) - STARTED))s"
	fi
	exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

podman version --format 'podman {{.Client.Version}}' | sed 's/^/    /'

log "building $IMAGE:$RUN and $EXAMPLE"
make -s image image-example ENGINE=podman TAG="$RUN" >"$TMP/build.log" 2>&1 || {
	cat "$TMP/build.log"
	fail "podman build failed"
}
log "image size: $(podman image inspect --format '{{.Size}}' "$IMAGE:$RUN") bytes (tend alone), example $(podman image inspect --format '{{.Size}}' "$EXAMPLE")"

# Can this machine run a container at all? If not, say why and fail.
if ! out=$(podman run --rm --entrypoint /tend "$IMAGE:$RUN" version 2>&1); then
	fail "podman cannot start a container on this machine: $out"
fi
log "runs: $out"

GRACE=$(bin/tend render --grace examples/kubernetes/spec.yaml)
WORST=$((GRACE - 5)) # the longest shutdown the spec allows, in seconds

# Output is read whole before grep -q looks at it: with pipefail, a grep -q that
# stops reading early would fail the pipeline through the writer's SIGPIPE.
# logs_have CTR REGEX: the container's output has a line matching REGEX.
logs_have() {
	local out
	out=$(podman logs "$1" 2>&1)
	grep -q -- "$2" <<<"$out"
}
# status_has CTR REGEX: `tend status --json` in the container has a line matching REGEX.
status_has() {
	local out
	out=$(podman exec "$1" /tend status --json)
	grep -q -- "$2" <<<"$out"
}
# instance_ready CTR: `tend status --json` in the container says the instance is ready.
instance_ready() {
	local out
	out=$(podman exec "$1" /tend status --json)
	out=$(grep -A1 '^  "ready": {' <<<"$out")
	grep -q '"status": "True"' <<<"$out"
}
# revision CTR: the revision tend runs.
revision() { podman exec "$1" /tend status --json | sed -n 's/^  "revision": "\(.*\)",$/\1/p'; }
runs_revision() { [ "$(revision "$1")" = "$2" ]; }
# reloads CTR: how many reloads tend has applied.
reloads() { podman logs "$1" 2>&1 | grep -c '"message":"reload applied"' || true; }
more_reloads() { [ "$(reloads "$1")" -gt "$2" ]; }
# file_revision FILE: the revision tend gives FILE (12 hex digits of its SHA-256).
file_revision() { sha256sum "$1" | cut -c1-12; }
# event_ms CTR CONTAINER EVENT: at_ms of the demo's last EVENT line from CONTAINER.
event_ms() {
	podman logs "$1" 2>&1 | sed -n "s/^$2 *| at_ms=\([0-9]*\) event=$3\b.*/\1/p" | tail -1
}

# The documented command lines (docs/reference.md "Running in a container") and the
# shipped manifests name localhost/tend-example:latest: this run's example image is
# tagged so, and a tag of that name from before is put back at the end.
saved_latest=$(podman images -q localhost/tend-example:latest)
podman tag "$EXAMPLE" localhost/tend-example:latest
tagged_latest=1

# --- the documented podman run line, as written in docs/reference.md -------------------
doc_run=$(awk '/^<!-- e2e: podman run -->$/ {on=1} on && /^podman run / {print; exit}' docs/reference.md)
[ -n "$doc_run" ] || fail "docs/reference.md has no podman run line under <!-- e2e: podman run -->"
podman container exists tend-example && fail "a container tend-example exists already (not ours): remove it first"
log "documented: $doc_run"
documented=1
eval "$doc_run" >/dev/null
waitfor 30 "the documented container ready" instance_ready tend-example
podman exec tend-example /tend status >"$TMP/doc-status.txt" || fail "podman exec tend-example /tend status failed"
grep -q '^web .*running' "$TMP/doc-status.txt" || fail "tend status in the documented container shows no running web: $(cat "$TMP/doc-status.txt")"
podman stop -t 19 tend-example >/dev/null
[ "$(podman inspect --format '{{.State.ExitCode}}' tend-example)" = 0 ] || fail "the documented container exited non-zero after podman stop"
podman rm tend-example >/dev/null
documented=
log "documented: podman run, exec /tend status, stop -t 19 (exit 0), rm"

# --- the example instance: tend as PID 1 with the spec of examples/kubernetes --------
mkdir -p "$TMP/spec"
cp examples/kubernetes/spec.yaml "$TMP/spec/spec.yaml"
log "example instance: podman run $CTR"
podman run -d --name "$CTR" -v "$TMP/spec:/etc/tend:ro" "$EXAMPLE" --watch /etc/tend/spec.yaml >/dev/null
pid=$(podman inspect --format '{{.State.Pid}}' "$CTR")
nspid=$(awk '/^NSpid:/ {print $NF}' "/proc/$pid/status")
[ "$nspid" = 1 ] || fail "tend is PID $nspid in its container, want 1"
waitfor 30 "the example instance ready (tend status --json)" instance_ready "$CTR"
log "ready: tend is PID 1, both containers ready"
podman healthcheck run "$CTR" >/dev/null || fail "the image's HEALTHCHECK (tend status --ready) failed on a ready instance"

# --watch on a bind-mounted spec: a rename-over reloads.
sed 's/--every 5s/--every 1s/' examples/kubernetes/spec.yaml >"$TMP/spec/spec.yaml.new"
mv "$TMP/spec/spec.yaml.new" "$TMP/spec/spec.yaml"
want=$(file_revision "$TMP/spec/spec.yaml")
waitfor 10 "--watch to load revision $want" runs_revision "$CTR" "$want"
waitfor 10 "the changed worker ready" instance_ready "$CTR"
log "--watch: the changed spec runs (revision $want)"

# SIGHUP from the runtime reloads.
before=$(reloads "$CTR")
podman kill --signal HUP "$CTR" >/dev/null
waitfor 10 "a reload after SIGHUP" more_reloads "$CTR" "$before"
log "SIGHUP: reloaded"

# podman stop: every container by its stop policy, tend exits 0 inside the grace period.
t0=$(now_ms)
podman stop -t 20 "$CTR" >/dev/null
t1=$(now_ms)
code=$(podman inspect --format '{{.State.ExitCode}}' "$CTR")
[ "$code" = 0 ] || fail "tend exited $code after podman stop, want 0"
draining=$(event_ms "$CTR" web draining)
drained=$(event_ms "$CTR" web drained)
term=$(event_ms "$CTR" worker SIGTERM)
[ -n "$draining" ] && [ -n "$drained" ] && [ -n "$term" ] ||
	fail "missing stop events: web draining '$draining', drained '$drained', worker SIGTERM '$term'"
[ "$draining" -ge "$t0" ] || fail "web drained before podman stop"
[ "$term" -ge "$drained" ] || fail "worker got SIGTERM at $term, before web had drained at $drained (term_barrier WAIT)"
logs_have "$CTR" '"step":"kill"' && fail "something needed SIGKILL"
[ $((t1 - t0)) -lt $((WORST * 1000)) ] || fail "the stop took $((t1 - t0)) ms, over the spec's longest shutdown of ${WORST}s"
log "podman stop: web drained by GET /shutdown (+$((drained - t0)) ms), then worker SIGTERM (+$((term - t0)) ms), exit 0 after $((t1 - t0)) ms (grace ${GRACE}s)"
podman rm "$CTR" >/dev/null

# --- orphans: a container leaves 20 children behind; tend (PID 1) reaps them --------
mkdir -p "$TMP/orphans"
cat >"$TMP/orphans/spec.yaml" <<'EOF'
containers:
  - name: spawner
    command: /demo orphans --count 20 --linger 1s
    restart_policy: {mode: never}
  - name: idle
    command: /demo worker --every 60s
EOF
podman run -d --name "$ORPHANS" -v "$TMP/orphans:/etc/tend:ro" "$EXAMPLE" >/dev/null
waitfor 20 "the spawner's 20 children" logs_have "$ORPHANS" 'event=spawned count=20'
pidns=$(readlink "/proc/$(podman inspect --format '{{.State.Pid}}' "$ORPHANS")/ns/pid")
# in_pidns: "<processes> <zombies>" in the container's PID namespace, from the host.
in_pidns() {
	local n=0 z=0 p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$pidns" ] || continue
		n=$((n + 1))
		grep -q '^State:[[:space:]]*Z' "$p/status" 2>/dev/null && z=$((z + 1))
	done
	echo "$n $z"
}
reaped() { [ "$(in_pidns)" = "2 0" ]; }
waitfor 20 "only tend and idle left, no zombies" reaped
log "orphans: 20 children outlived their parent and were reaped: $(in_pidns | cut -d' ' -f1) processes left, no zombies"
podman stop -t 20 "$ORPHANS" >/dev/null
[ "$(podman inspect --format '{{.State.ExitCode}}' "$ORPHANS")" = 0 ] || fail "tend exited non-zero after podman stop (orphans)"
podman rm "$ORPHANS" >/dev/null

# --- cgroups: with a writable cgroup tree each container gets its own, with its limits;
# an OOM kill is named. Without one tend runs on with cgroups off and says why, and
# what a run leaves (escaper's orphans, in sessions of their own) dies when the run
# ends either way: by its cgroup, or without cgroups by its TEND_RUN mark.
mkdir -p "$TMP/cg"
cat >"$TMP/cg/spec.yaml" <<'EOF'
containers:
  - name: hog
    command: /demo alloc --mb 200
    limits: {memory: 64Mi}
    restart_policy: {mode: never}
  - name: idle
    command: /demo worker --every 60s
  - name: escaper
    command: /demo orphans --count 3 --linger 600s
    restart_policy: {mode: never}
EOF
cg_json() { podman exec "$1" /tend status --json; }
# escapers: the orphans of escaper's run (`/demo sleep`, each in a session of its
# own, lingering 600 s) left in $CG's PID namespace, seen from the host.
escapers() {
	local ns n=0 p
	ns=$(readlink "/proc/$(podman inspect --format '{{.State.Pid}}' "$CG")/ns/pid")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$ns" ] || continue
		[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -d' ' -f1-2)" = "/demo sleep" ] && n=$((n + 1))
	done
	echo "$n"
}
no_escapers() { [ "$(escapers)" = 0 ]; }
oom_named() { grep -q '"reason": "OOMKilled"' <<<"$(cg_json "$CG")"; }
log "cgroups: podman run --privileged --cgroupns=private (a writable cgroup tree of the container's own)"
podman run -d --name "$CG" --privileged --cgroupns=private -v "$TMP/cg:/etc/tend:ro" "$EXAMPLE" >/dev/null
waitfor 30 "the OOM kill of hog named" oom_named
doc=$(cg_json "$CG")
grep -q '"mode": "v[12]"' <<<"$doc" || fail "cgroups mode is not v1/v2 with a writable tree: $(grep -A2 '"cgroups"' <<<"$doc")"
grep -q '"cgroup": "/containers/idle"' <<<"$doc" || fail "idle is not in /containers/idle"
grep -q '"limits_applied": false' <<<"$doc" && fail "a limit was not applied"
waitfor 20 "escaper's 3 orphans" logs_have "$CG" 'event=spawned count=3'
waitfor 20 "escaper's orphans killed with its run (cgroup)" no_escapers
podman stop -t 10 "$CG" >/dev/null
podman rm "$CG" >/dev/null
log "cgroups: hog's 200 MiB under a 64Mi limit was OOMKilled and named; idle in /containers/idle; escaper's orphans gone with its run"
podman run -d --name "$CG" -v "$TMP/cg:/etc/tend:ro" "$EXAMPLE" >/dev/null
off_reported() { grep -q '"mode": "off"' <<<"$(cg_json "$CG")"; }
waitfor 20 "cgroups off with a reason in a default container" off_reported
reason=$(cg_json "$CG" | grep -A2 '"cgroups"' | sed -n 's/.*"reason": "\(.*\)".*/\1/p')
[ -n "$reason" ] || fail "cgroups off without a reason"
header=$(podman exec "$CG" /tend status) # whole, then its first line: head -1 would end podman with SIGPIPE (pipefail)
header=${header%%$'\n'*}
[ "$header" = "cgroups off: $reason; limits not applied to hog" ] || fail "tend status opens with '$header', want 'cgroups off: $reason; limits not applied to hog'"
waitfor 20 "escaper's 3 orphans" logs_have "$CG" 'event=spawned count=3'
waitfor 20 "escaper's orphans killed with its run by their TEND_RUN mark" no_escapers
podman stop -t 10 "$CG" >/dev/null
podman rm "$CG" >/dev/null
log "cgroups: without a writable tree tend runs with cgroups off ($reason), says so first in tend status, and escaper's orphans went with its run by their mark"

# --- podman kube play of examples/kubernetes, the shipped files unchanged -------------
# The pod's API is reached in the pod's network namespace (nsenter).
podman pod exists "$POD" && fail "a pod $POD exists already (not ours): remove it first"
for v in tend-example-spec tend-run; do # kube play's volumes for the ConfigMap and the emptyDir
	podman volume exists "$v" && fail "a volume $v exists already (not ours): remove it first"
done
log "podman kube play --configmap examples/kubernetes/configmap.yaml examples/kubernetes/deployment.yaml"
played=1
podman kube play --configmap examples/kubernetes/configmap.yaml examples/kubernetes/deployment.yaml >"$TMP/play.log" 2>&1 || {
	cat "$TMP/play.log"
	fail "podman kube play failed"
}
pod_pid=$(podman inspect --format '{{.State.Pid}}' "$POD_CTR")
in_pod() { nsenter -t "$pod_pid" -n "$@"; }
waitfor 30 "GET /v1/ready = 200 on the pod's :8080" in_pod bin/tend status --ready --listen 127.0.0.1:8080
[ "$(revision "$POD_CTR")" = "$(file_revision examples/kubernetes/spec.yaml)" ] ||
	fail "the pod does not run the ConfigMap's spec: revision $(revision "$POD_CTR")"
status_has "$POD_CTR" '"instance": "tend-example"' || fail "the pod's instance is not tend-example"
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$POD_CTR")" = true ] || fail "the pod's root filesystem is not read-only"
# Without a token the TCP API answers reads only; mutations go over the unix socket.
in_pod bin/tend reload --listen 127.0.0.1:8080 >/dev/null 2>&1 && fail "a reload over TCP without a token was accepted"
podman exec "$POD_CTR" /tend reload >/dev/null || fail "a reload over the pod's unix socket was refused"
log "pod: /v1/ready 200 on the pod's :8080, the ConfigMap's spec runs on a read-only root, mutations only over the unix socket"
# podman 4.3's kube down stops with a 0 s timeout (SIGKILL at once; podman issues
# 19135, 22397): stop the pod with the grace period first, as the kubelet would.
t0=$(now_ms)
podman pod stop -t "$GRACE" "$POD" >/dev/null
t1=$(now_ms)
code=$(podman inspect --format '{{.State.ExitCode}}' "$POD_CTR")
[ "$code" = 0 ] || fail "tend in the pod exited $code, want 0"
logs_have "$POD_CTR" 'web *| .*event=drained' || fail "web in the pod was not stopped by its stop policy"
podman kube down examples/kubernetes/deployment.yaml >/dev/null
podman pod exists "$POD" && fail "podman kube down left the pod"
log "pod: stopped by its stop policies, exit 0 after $((t1 - t0)) ms; kube down removed it"
