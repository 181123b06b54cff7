#!/usr/bin/env bash
# Whether sampled stacks keep the profiles right in shape: each site's
# share of the waits (--profile locks on creat-unlink -j 2 --share shared)
# and of the sleeps (--profile offcpu on fsync -j 2 on a made ext4), with
# the stacks sampled (the default) against every stack walked
# (--profile-every-stack), in alternating invocations, the runs of each
# pooled. The goal: every site within 2 points of its unsampled share.
# Two invocations are two stretches of the machine, so part of any
# difference is the workload's own from run to run: the last column
# repeats the unsampled profile against itself (odd invocations against
# even ones) as that floor.
#
#   bench/sampled-stacks.sh [--fsscale BIN] [--rounds N] [--runs N] [--duration S]
#
# Needs root; builds nothing (cargo build --release).
set -euo pipefail
bin=target/release/fsscale
rounds=4
runs=5
duration=0.5
while [ $# -gt 0 ]; do
    case "$1" in
        --fsscale) bin=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        *) echo "bench/sampled-stacks.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "bench/sampled-stacks.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profile() {  # profile NAME POINT... : one invocation each way per round
    local name=$1; shift
    for round in $(seq 1 "$rounds"); do
        for way in sampled every; do
            local extra=()
            [ "$way" = every ] && extra=(--profile-every-stack)
            # shellcheck disable=SC2068
            "$bin" run $@ "${extra[@]}" -n "$runs" --duration "$duration" --warmup-runs 0 \
                -o "$work/$name-$way-$round.json" --force -q >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
        done
    done
}
profile locks creat-unlink -j 2 --share shared --mode thread --dir /dev/shm --profile locks
profile offcpu fsync -j 2 --share private --mode thread --fs ext4 --profile offcpu
python3 - "$work" "$rounds" <<'PY'
import glob, json, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def shares(files, key):
    totals = {}
    for f in files:
        for point in json.load(open(f))["points"]:
            for run in point["runs"]:
                for site in (run.get(key) or {}).get("sites", []):
                    name = site["site"] + (" [" + site["state"] + "]" if "state" in site else "")
                    totals[name] = totals.get(name, 0) + site["count"]
    all_ = sum(totals.values()) or 1
    return {k: v / all_ for k, v in totals.items()}, sum(totals.values())

for name, key in (("locks", "locks"), ("offcpu", "offcpu")):
    sampled, n_s = shares(glob.glob(f"{work}/{name}-sampled-*.json"), key)
    every, n_e = shares(glob.glob(f"{work}/{name}-every-*.json"), key)
    odd, _ = shares([f"{work}/{name}-every-{r}.json" for r in range(1, rounds + 1, 2)], key)
    even, _ = shares([f"{work}/{name}-every-{r}.json" for r in range(2, rounds + 1, 2)], key)
    print(f"\n{name}: {n_s:,} events sampled, {n_e:,} every stack walked")
    print("| site | share, sampled | share, every stack | difference, points | every stack: odd − even rounds, points |")
    print("|---|---:|---:|---:|---:|")
    top = sorted(set(sampled) | set(every), key=lambda k: -max(sampled.get(k, 0), every.get(k, 0)))[:8]
    for site in top:
        s, e = sampled.get(site, 0), every.get(site, 0)
        print(f"| {site} | {100 * s:.1f}% | {100 * e:.1f}% | {100 * (s - e):+.1f} | {100 * (odd.get(site, 0) - even.get(site, 0)):+.1f} |")
PY
