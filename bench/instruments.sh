#!/usr/bin/env bash
# The cost of each instrument, and whether its two collectors agree.
#
#   bench/instruments.sh [--pairs N] [--fsscale BIN] [--dir DIR] [--duration S]
#                        [--points "P1;P2"] [--instruments "I1;I2"]
#
# Cost: paired invocations of the same point without and with an instrument
# (alternating which goes first), the median of the pairs' ratios of ops/s
# (with / without) and its 95% confidence interval from the order
# statistics (distribution-free: no assumption about the VM's noise).
#
# Agreement: from the instrumented runs, per collector (bpf, tracefs), the
# share of the workers' time the lock profile says they waited, and the
# share the off-CPU profile says they slept beside the scheduler's own
# `asleep` figure (median and range over the runs).
#
# Prints two Markdown tables. Needs root; builds nothing (cargo build --release).
set -euo pipefail
pairs=10
bin=target/release/fsscale
dir=/dev/shm
duration=0.5
points="creat-unlink -j 2 --share shared;stat -j 1 --share private;fsync -j 2 --share private --fs ext4"
instruments="--profile locks;--profile locks --profile-via tracefs;--profile offcpu;--profile offcpu --profile-via tracefs;--profile cpu;--verify"
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) pairs=$2; shift 2 ;;
        --fsscale) bin=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --points) points=$2; shift 2 ;;
        --instruments) instruments=$2; shift 2 ;;
        *) echo "bench/instruments.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "bench/instruments.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs="$work/runs.jsonl"
: > "$runs"
# One point per invocation; appends "<point>\t<instrument>\t<run as JSON>" for the summary.
one() {
    local point=$1 instrument=$2
    # shellcheck disable=SC2086
    "$bin" run $point $instrument -n 1 --warmup-runs 0 --warmup 0.1 --duration "$duration" --dir "$dir" \
        -o "$work/r.json" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    python3 - "$work/r.json" "$point" "$instrument" "$runs" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
run = doc["points"][0]["runs"][0]
with open(sys.argv[4], "a") as out:
    out.write(json.dumps({"point": sys.argv[2], "instrument": sys.argv[3], "run": run}) + "\n")
PY
    rm -f "$work/r.json"
}
IFS=';' read -r -a point_list <<< "$points"
IFS=';' read -r -a instrument_list <<< "$instruments"
for point in "${point_list[@]}"; do
    for instrument in "${instrument_list[@]}"; do
        for i in $(seq "$pairs"); do
            if [ $((i % 2)) -eq 0 ]; then
                one "$point" ""; one "$point" "$instrument"
            else
                one "$point" "$instrument"; one "$point" ""
            fi
        done
    done
done
python3 - "$runs" "$pairs" <<'PY'
import json, math, statistics, sys
from collections import defaultdict

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pairs = int(sys.argv[2])

def worker_seconds(run):
    if run.get("completion_s"):
        return sum(run["completion_s"])
    return run["elapsed_s"] * len(run["per_worker_ops"])

def median_ci(values):
    """The median and its 95% interval from the order statistics (binomial, p = 1/2)."""
    v, n = sorted(values), len(values)
    k, total = 0, 0.0
    # The largest k with P(Binomial(n, 1/2) < k) <= 2.5%.
    while k < n:
        total += math.comb(n, k) / 2**n
        if total > 0.025:
            break
        k += 1
    if k == 0:
        return statistics.median(v), float("nan"), float("nan")
    return statistics.median(v), v[k - 1], v[n - k]

# Cost: pairs in invocation order, per (point, instrument).
print(f"| point | instrument | ops/s without | ops/s with | with / without, median of {pairs} pairs [95% CI] |")
print("|---|---|---:|---:|---:|")
groups = defaultdict(list)
for r in rows:
    groups[r["point"]].append(r)
for point, seq in groups.items():
    # Each instrument's block is 2 * pairs runs in order: rebuild its pairs from the sequence.
    blocks = [seq[i:i + 2 * pairs] for i in range(0, len(seq), 2 * pairs)]
    for block in blocks:
        name = next(r["instrument"] for r in block if r["instrument"])
        with_ = [r["run"]["ops_per_s"] for r in block if r["instrument"]]
        without = [r["run"]["ops_per_s"] for r in block if not r["instrument"]]
        ratios = [w / o for w, o in zip(with_, without)]
        m, lo, hi = median_ci(ratios)
        print(f"| {point} | {name} | {statistics.median(without):,.0f} | {statistics.median(with_):,.0f} "
              f"| {m:.3f} [{lo:.3f}, {hi:.3f}] |")

# Agreement between collectors, per point.
print()
print("| point | profile | collected by | runs | share of worker time, median [min, max] | the asleep column, median [min, max] | BPF programs: ns per run, share of worker time (medians) |")
print("|---|---|---|---:|---:|---:|---:|")
shares = defaultdict(lambda: ([], []))
costs = defaultdict(list)
for r in rows:
    run = r["run"]
    seconds = worker_seconds(run)
    if seconds <= 0:
        continue
    for profile in ("locks", "offcpu"):
        p = run.get(profile) or {}
        if p.get("programs"):
            cost = p["programs"]
            costs[(r["point"], profile, p.get("method", "tracefs"))].append(
                (1e9 * cost["seconds"] / max(cost["runs"], 1), cost["seconds"] / seconds))
    if run.get("locks"):
        shares[(r["point"], "locks", run["locks"].get("method", "tracefs"))][0].append(run["locks"]["wait_s"] / seconds)
    if run.get("offcpu"):
        o = run["offcpu"]
        sched = [w for w in run.get("sched", []) if w["window_s"] > 0]
        column = statistics.mean(1 - (w["on_cpu_s"] + w["runqueue_s"]) / w["window_s"] for w in sched) if sched else float("nan")
        key = (r["point"], "offcpu", o.get("method", "tracefs"))
        shares[key][0].append(o["asleep_s"] / seconds)
        shares[key][1].append(column)
fmt = lambda v: f"{100 * statistics.median(v):.2f}% [{100 * min(v):.2f}, {100 * max(v):.2f}]" if v else "-"
for (point, profile, method), (mine, column) in sorted(shares.items()):
    c = costs.get((point, profile, method))
    cost = f"{statistics.median(x for x, _ in c):,.0f} ns, {100 * statistics.median(y for _, y in c):.2f}%" if c else "-"
    print(f"| {point} | {profile} | {method} | {len(mine)} | {fmt(mine)} | {fmt(column)} | {cost} |")
PY
