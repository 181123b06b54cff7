#!/usr/bin/env bash
# Which lock profile's sites are nearer the truth: the sampled one, or the
# one with every stack walked? A third view that walks no stack at a wait:
# the CPU profile (perf sampling at 1 kHz), whose samples in the spinlock
# slow path, by the lock call's two callers, are where the workers spun.
# Spin time is not a count of waits (a site whose holder keeps the lock
# longer spins more per wait), so it is a reference for the shape, not a
# measure to match to the point.
#
#   bench/lock-sites-vs-cpu.sh [--fsscale BIN] [--runs N] [-- POINT...]
#
# Default point: creat-unlink -j 2 --share shared. Needs root; builds
# nothing (cargo build --release). Prints a Markdown table.
set -euo pipefail
bin=target/release/fsscale
runs=5
while [ $# -gt 0 ]; do
    case "$1" in
        --fsscale) bin=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "bench/lock-sites-vs-cpu.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
point=("$@")
[ ${#point[@]} -gt 0 ] || point=(creat-unlink -j 2 --share shared)
[ -x "$bin" ] || { echo "bench/lock-sites-vs-cpu.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for how in cpu sampled every; do
    case $how in
        cpu) profile=(--profile cpu) ;;
        sampled) profile=(--profile locks) ;;
        every) profile=(--profile locks --profile-every-stack) ;;
    esac
    "$bin" run "${point[@]}" "${profile[@]}" -n "$runs" --duration 0.5 --dir /dev/shm -o "$work/$how.json" --force -q \
        >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
done
python3 - "$work" <<'PY'
import collections, json, sys

work = sys.argv[1]

def runs(name):
    for p in json.load(open(f"{work}/{name}.json"))["points"]:
        yield from p["runs"]

def spin_sites():
    c = collections.Counter()
    for r in runs("cpu"):
        for stack, n in r["cpu_profile"]["folded"].items():
            frames = stack.split(";")
            if any("queued_spin_lock_slowpath" in f for f in frames):
                i = max(i for i, f in enumerate(frames) if f.startswith("_raw_spin_lock"))
                c[" ← ".join([frames[i]] + [frames[j] for j in (i - 1, i - 2) if j >= 0])] += n
    return c

def wait_sites(name):
    c = collections.Counter()
    for r in runs(name):
        for s in r["locks"]["sites"]:
            c[s["site"]] += s["count"]
    return c

spin, sampled, every = spin_sites(), wait_sites("sampled"), wait_sites("every")
share = lambda c, s: 100 * c[s] / max(sum(c.values()), 1)
print(f"spin samples {sum(spin.values())}, waits sampled {sum(sampled.values())}, waits with every stack {sum(every.values())}")
print()
print("| site | CPU: share of spin samples | share of waits, sampled | share of waits, every stack walked |")
print("|---|---:|---:|---:|")
sites = sorted(set(spin) | set(sampled) | set(every), key=lambda s: -(share(spin, s) + share(sampled, s) + share(every, s)))
for s in sites[:10]:
    print(f"| {s} | {share(spin, s):.1f}% | {share(sampled, s):.1f}% | {share(every, s):.1f}% |")
PY
