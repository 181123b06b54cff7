#!/usr/bin/env bash
# Harness overhead: fsscale's ops/s against a minimal C loop doing the same
# system calls (bench/ref/ref.c), alternating the two so drift hits both.
#
#   bench/overhead.sh [ROUNDS] [SECONDS] [DIR]     (defaults: 10 2 /dev/shm)
#
# Prints a Markdown table: medians of each, and the median (with range) of the
# per-round ratios fsscale / C, which pairs the two runs of a round and so
# cancels the slow drift a VM shows (target: median ratio >= 0.98).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
seconds=${2:-2}
dir=${3:-/dev/shm}
warmup=0.2
cc -O2 -o bench/ref/ref bench/ref/ref.c
cargo build --release --quiet
fsscale=target/release/fsscale
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| op | workers | C loop ops/s (median) | fsscale ops/s (median) | fsscale / C, paired median | range of paired ratios |"
echo "|---|---:|---:|---:|---:|---:|"
for op in stat open-close creat-unlink; do
  for workers in 1 2; do
    c=() f=()
    for ((r = 0; r < rounds; r++)); do
      scratch="$dir/fsscale-ref-$$-$r"
      c+=("$(bench/ref/ref "$op" "$scratch" "$workers" "$seconds" "$warmup")")
      rm -rf "$scratch"
      "$fsscale" run "$op" -j "$workers" --share private --mode process -n 1 \
        --duration "$seconds" --warmup "$warmup" --dir "$dir" -o "$work/r.json" --force >/dev/null 2>&1
      f+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["runs"][0]["ops_per_s"])' "$work/r.json")")
    done
    python3 - "$op" "$workers" "${c[*]}" "${f[*]}" <<'PY'
import statistics, sys
op, workers, c, f = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
mc, mf = statistics.median(c), statistics.median(f)
ratios = [b / a for a, b in zip(c, f)]
print(f"| {op} | {workers} | {mc:,.0f} | {mf:,.0f} | {statistics.median(ratios):.3f} | {min(ratios):.3f} - {max(ratios):.3f} |")
PY
  done
done
