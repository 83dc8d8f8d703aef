#!/usr/bin/env python3
"""bench/oneshot_ab.py — a one-shot `tend run` of two builds, interleaved in pairs.

    python3 bench/oneshot_ab.py OLD NEW [PAIRS]   # default 200 pairs

Each pair runs `OLD run spec.yaml` and `NEW run spec.yaml` (the order of the two drawn
at random) on a spec of one job, `/bin/true`, with cgroups off, and records each run's
wall time and its CPU time (user + system of tend and its child, from wait4's rusage:
microseconds, where /usr/bin/time rounds to 10 ms). It prints the medians and the
median of the per-pair ratios NEW/OLD, which cancel most of a loaded machine's drift.
"""
import os, random, statistics, subprocess, sys, tempfile, time

old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 200
work = tempfile.mkdtemp(prefix="tend-oneshot-ab.")
spec = os.path.join(work, "spec.yaml")
with open(spec, "w") as f:
    f.write("instance: {name: oneshot, cgroups: \"off\"}\n"
            "containers:\n  - {name: once, command: /bin/true, restart_policy: {mode: never}}\n")


def run(binary):
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "run", "--log-level", "error", spec], cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} run exited {os.waitstatus_to_exitcode(status)}")
    return wall * 1000, (ru.ru_utime + ru.ru_stime) * 1000


res = {old: [], new: []}
for _ in range(pairs):
    order = [old, new]
    random.shuffle(order)
    for b in order:
        res[b].append(run(b))


def med(b, i):
    return statistics.median(r[i] for r in res[b])


print(f"{pairs} pairs, load {os.getloadavg()[0]:.1f} at the end")
for i, what in ((0, "wall ms"), (1, "CPU ms")):
    ratios = [n[i] / o[i] for o, n in zip(res[old], res[new])]
    q = statistics.quantiles(ratios, n=4)
    print(f"{what:8} old {med(old, i):7.2f}  new {med(new, i):7.2f}  "
          f"new/old per pair: median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f}–{q[2]:.3f})")
