#!/usr/bin/env bash
# Open loops (`--rate`), measured on this machine: what a test cannot
# assert, since each figure depends on how busy the machine is.
#
#   bench/open-loop.sh [--fsscale BIN] [--dir DIR] [--duration S] [--runs N]
#
# 1. The generator's own lag: `stat -j 1` at 10k, 50k and 100k ops/s, far
#    below what one worker can do, so a late start is the pacing's (a sleep
#    that woke late, a spin that lost its CPU), not the op's.
# 2. Closed against open loop on `creat-unlink --share shared -j 2`: the
#    closed loop's p99 (its service time) against the open loop's response
#    p99 at rates up to and past the closed loop's throughput.
# 3. The knee of tmpfs against ext4 for `creat-unlink -j 2 --share shared`:
#    the same rates on each (needs root for --fs).
# 4. The highest rate meeting p99 <= 100 us (`--slo`) for `creat-unlink
#    --share shared -j 1,2` on tmpfs and ext4 (needs root), and each
#    curve's knee, as `fsscale analyze` says them; with the search's wall
#    time.
#
# Prints Markdown tables. Builds nothing (cargo build --release).
set -euo pipefail
bin=target/release/fsscale
dir=/dev/shm
duration=1
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        --fsscale) bin=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "bench/open-loop.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "bench/open-loop.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # run OUT ARGS...: one fsscale run into $work/OUT.json
    local out=$1; shift
    "$bin" run "$@" -n "$runs" --duration "$duration" --warmup-runs 0 --dir "$dir" -o "$work/$out.json" --force -q \
        >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
}

# Percentiles of merged histograms, and the rows, from the results file.
table() {  # table FILE KIND: open (per point) or closed (--latency)
    python3 - "$1" "$2" <<'PY'
import json, sys

def bounds(b):
    if b < 32:
        return b, b
    group = b >> 4
    shift = group - 1
    low = (16 + (b & 15)) << shift
    return low, low + (1 << shift) - 1

def merged(hists):
    counts = {}
    for h in hists:
        for b, c in h["buckets"]:
            counts[b] = counts.get(b, 0) + c
    return sorted(counts.items()), max((h["max_ns"] for h in hists), default=0)

def quantile(hists, q):
    buckets, top = merged(hists)
    n = sum(c for _, c in buckets)
    if n == 0:
        return float("nan")
    rank, seen = max(1, -(-int(q * n * 1e6) // 10**6)), 0
    for b, c in buckets:
        seen += c
        if seen >= rank:
            return min(bounds(b)[1], top)
    return top

def us(ns):
    return f"{ns / 1000:.1f}"

doc = json.load(open(sys.argv[1]))
for p in doc["points"]:
    runs = p["runs"]
    ops = sorted(r["ops_per_s"] for r in runs)[len(runs) // 2]
    label = f'{p["workload"]} {p["share"]} x{p["workers"]}' + (f' {doc["target"]["fs_type"]}' if not p.get("fs") else f' {p["fs"]}')
    if sys.argv[2] == "closed":
        lat = [r["latency"] for r in runs]
        print(f"| {label} | closed | {ops:.0f} | - | {us(quantile(lat, 0.5))} | {us(quantile(lat, 0.99))} | {us(quantile(lat, 0.99))} | - | |")
    else:
        o = [r["open_loop"] for r in runs]
        behind = sum(1 for x in o if x["behind"])
        resp, svc, lag = [x["response"] for x in o], [x["service"] for x in o], [x["lag"] for x in o]
        mark = f"!behind {behind}/{len(o)}" if behind else ""
        print(f'| {label} | {p["rate"]:.0f} | {ops:.0f} | {us(quantile(lag, 0.99))} | {us(quantile(resp, 0.5))} | '
              f'{us(quantile(resp, 0.99))} | {us(quantile(svc, 0.99))} | {us(quantile(lag, 0.5))} | {mark} |')
PY
}

header() {
    echo "| point | asked ops/s | ops/s | lag p99 µs | response p50 µs | response p99 µs | service p99 µs | lag p50 µs | |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
}

echo "### The generator's lag (stat -j 1, $runs runs of ${duration}s each)"
echo
header
run lag stat -j 1 --share private --rate 10k,50k,100k
table "$work/lag.json" open
echo

echo "### Closed against open loop (creat-unlink --share shared -j 2)"
echo
header
run closed creat-unlink -j 2 --share shared --latency
table "$work/closed.json" closed
closed=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; r=sorted(x["ops_per_s"] for x in p["runs"]); print(int(r[len(r)//2]))' "$work/closed.json")
# Rates at a quarter, half, 90% and 120% of what the closed loop did.
rates=$(python3 -c "c=$closed; print(','.join(str(max(1, int(c * f))) for f in (0.25, 0.5, 0.9, 1.2)))")
run open creat-unlink -j 2 --share shared --rate "$rates"
table "$work/open.json" open
echo

if [ "$(id -u)" = 0 ]; then
    echo "### The knee: tmpfs against ext4 (creat-unlink --share shared -j 2)"
    echo
    header
    run knee creat-unlink -j 2 --share shared --fs tmpfs,ext4 --rate "$rates"
    table "$work/knee.json" open
else
    echo "(the knee of tmpfs against ext4 needs root for --fs: skipped)"
fi

if [ "$(id -u)" = 0 ]; then
    echo
    echo "### The highest rate meeting p99 <= 100 us (creat-unlink --share shared -j 1,2 --slo p99=100us)"
    echo
    started=$(date +%s)
    run slo creat-unlink -j 1,2 --share shared --fs tmpfs,ext4 --slo p99=100us
    echo "The search took $(( $(date +%s) - started )) s."
    echo
    echo '```'
    "$bin" analyze "$work/slo.json" | grep -E '^  (slo|knee) ' | sed "s|$work/||"
    echo '```'
fi
