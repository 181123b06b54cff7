#!/usr/bin/env bash
# The cost of each instrument: paired runs of the same point without and
# with it (alternating which goes first), the median ratio of their ops/s.
#
#   bench/instruments.sh [--pairs N] [--fsscale BIN] [--dir DIR]
#
# Prints a Markdown table: workload, instrument, median ops/s without and
# with, and the median of the pairs' ratios (with / without). Needs root.
set -euo pipefail
pairs=10
bin=target/release/fsscale
dir=/dev/shm
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) pairs=$2; shift 2 ;;
        --fsscale) bin=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "bench/instruments.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "bench/instruments.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One point per invocation: the figure is its run's ops/s.
ops() {
    "$bin" run "$@" -n 1 --warmup-runs 0 --warmup 0.1 --duration 0.5 --dir "$dir" -o "$work/r.json" >/dev/null 2>&1
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["runs"][0]["ops_per_s"])' "$work/r.json"
}
echo "| workload | instrument | ops/s without | ops/s with | with / without (median of $pairs pairs) |"
echo "|---|---|---:|---:|---:|"
for point in "stat -j 1 --share private" "creat-unlink -j 2 --share shared"; do
    for instrument in "--profile locks" "--profile cpu" "--verify" "--profile locks,cpu --verify"; do
        : > "$work/pairs"
        for i in $(seq "$pairs"); do
            # shellcheck disable=SC2086
            if [ $((i % 2)) -eq 0 ]; then
                a=$(ops $point); b=$(ops $point $instrument)
            else
                b=$(ops $point $instrument); a=$(ops $point)
            fi
            echo "$a $b" >> "$work/pairs"
        done
        python3 - "$work/pairs" "$point" "$instrument" <<'PY'
import statistics, sys
pairs = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
without = statistics.median(a for a, _ in pairs)
with_ = statistics.median(b for _, b in pairs)
ratio = statistics.median(b / a for a, b in pairs)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {without:,.0f} | {with_:,.0f} | {ratio:.3f} |")
PY
    done
done
