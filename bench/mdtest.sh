#!/usr/bin/env bash
# fsscale's mdtest phases against real mdtest (from the ior project, built
# with the same MPI), with the same items, ranks and directory mode.
#
#   bench/mdtest.sh --mdtest PATH [--fsscale BIN] [--items N] [--ranks R]
#                   [--reps K] [--rounds N] [--dir DIR] [--share private|shared] [--mpi]
#
# --mpi runs fsscale under the same `mpirun -np R` as mdtest, every rank one
# worker (BIN built with `cargo build --release --features mpi`); without it
# fsscale's R workers are forked processes of one fsscale.
#
# Each of N rounds runs mdtest under `mpirun -np R` for K iterations (-i K;
# its mean) and fsscale's `mdtest -j R -n K` (the median of its runs). Prints
# a Markdown table: per phase the medians over the rounds and the median of
# the rounds' ratios.
set -euo pipefail
mdtest=""
bin=target/release/fsscale
items=2000
ranks=2
reps=3
rounds=6
dir=/dev/shm
share=private
launcher=()
while [ $# -gt 0 ]; do
    case "$1" in
        --mdtest) mdtest=$2; shift 2 ;;
        --fsscale) bin=$2; shift 2 ;;
        --items) items=$2; shift 2 ;;
        --ranks) ranks=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --share) share=$2; shift 2 ;;
        --mpi) launcher=(mpirun); shift ;;
        *) echo "bench/mdtest.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#launcher[@]} -gt 0 ] && launcher=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")
[ -x "$mdtest" ] || { echo "bench/mdtest.sh: give --mdtest PATH (build hpc/ior: ./bootstrap && ./configure && make)" >&2; exit 2; }
[ -x "$bin" ] || { echo "bench/mdtest.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d "$dir/mdtest-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
unique=""
[ "$share" = private ] && unique="-u"
# Rounds alternate which goes first: this VM switches speed regimes (30-40%)
# between invocations, so one run of each would compare regimes, not tools.
for round in $(seq "$rounds"); do
    run_mdtest() {
        rm -rf "$work/mdtest"
        mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$mdtest" -n "$items" $unique -F -i "$reps" \
            -d "$work/mdtest" > "$work/mdtest.$round.out" 2>&1
    }
    run_fsscale() {
        mkdir -p "$work/fsscale"
        "${launcher[@]}" "$bin" run mdtest -j "$ranks" --share "$share" --items "$items" -n "$reps" --dir "$work/fsscale" \
            -o "$work/fsscale.$round.json" > /dev/null 2>&1
    }
    if [ $((round % 2)) -eq 1 ]; then run_mdtest; run_fsscale; else run_fsscale; run_mdtest; fi
done
how="fsscale as processes"
[ ${#launcher[@]} -gt 0 ] && how="fsscale as MPI ranks"
python3 - "$work" "$items" "$ranks" "$share" "$reps" "$rounds" "$how" <<'PY'
import json, statistics, sys
work, items, ranks, share, reps, rounds, how = sys.argv[1:]
phases = ["create", "stat", "read", "remove"]
labels = {"create": "File creation", "stat": "File stat", "read": "File read", "remove": "File removal"}
mdtest = {p: [] for p in phases}
ours = {p: [] for p in phases}
for r in range(1, int(rounds) + 1):
    for line in open(f"{work}/mdtest.{r}.out"):
        for p in phases:
            if line.strip().startswith(labels[p]):
                mdtest[p].append(float(line.split()[-2]))  # Max, Min, Mean, Std Dev
    doc = json.load(open(f"{work}/fsscale.{r}.json"))
    for point in doc["points"]:
        ours[point["workload"].removeprefix("mdtest-")].append(statistics.median(x["ops_per_s"] for x in point["runs"]))
print(f"{ranks} workers ({how}), {items} files each, {share} directories; {rounds} rounds, each: mdtest -i {reps} (its mean) and fsscale -n {reps} (its median), alternating which goes first")
print()
print("| phase | mdtest ops/s | fsscale ops/s | fsscale / mdtest (median of rounds) | range of the rounds' ratios |")
print("|---|---:|---:|---:|---:|")
for p in phases:
    ratios = [f / m for m, f in zip(mdtest[p], ours[p])]
    print(f"| {p} | {statistics.median(mdtest[p]):,.0f} | {statistics.median(ours[p]):,.0f} | {statistics.median(ratios):.2f} | {min(ratios):.2f}-{max(ratios):.2f} |")
PY
