#!/usr/bin/env bash
# fsscale's mdtest phases against real mdtest (from the ior project, built
# with the same MPI), with the same items, ranks and directory mode.
#
#   bench/mdtest.sh --mdtest PATH [--fsscale BIN] [--items N] [--ranks R]
#                   [--reps K] [--rounds N] [--dir DIR] [--share private|shared]
#                   [--mpi] [--shaped] [--split [--hz HZ]]
#
# --mpi runs fsscale under the same `mpirun -np R` as mdtest, every rank one
# worker (BIN built with `cargo build --release --features mpi`); without it
# fsscale's R workers are forked processes of one fsscale.
#
# --shaped gives fsscale mdtest's lookup shape: `--path absolute`, so every
# item is named from / through the same number of components as mdtest's
# (DIR/mdtest/test-dir.0-0/mdtest_tree.0.0/file.mdtest.0.N against
# DIR/fsscale/<scratch>/w0/file.mdtest.0.N); without it fsscale names items
# relative to the worker's directory.
#
# --split also says where each tool's time per item goes: mdtest runs under
# `perf record -e cpu-clock -F HZ -g` (default 10000) and bench/mdtest_split.py
# counts its kernel and user samples inside each phase; fsscale's figures are
# its own per-worker CPU (sys and user seconds in the timed phase). fsscale
# runs under the same perf record, so both pay the sampling's cost. Needs perf.
#
# Each of N rounds runs mdtest under `mpirun --bind-to none -np R` for K iterations (-i K;
# its mean) and fsscale's `mdtest -j R -n K` (the median of its runs). Prints
# a Markdown table: per phase the medians over the rounds and the median of
# the rounds' ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mdtest=""
bin=target/release/fsscale
items=2000
ranks=2
reps=3
rounds=6
dir=/dev/shm
share=private
launcher=()
shape=()
split=""
hz=10000
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
        --shaped) shape=(--path absolute); shift ;;
        --split) split=1; shift ;;
        --hz) hz=$2; shift 2 ;;
        *) echo "bench/mdtest.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
# Unbound ranks, as fsscale's workers are without --pin: OpenMPI binds a
# rank to a core by default, which with a FUSE daemon (or other work) on
# the same cores decides the rates more than either tool does.
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks")
[ ${#launcher[@]} -gt 0 ] && launcher=("${mpirun[@]}")
[ -x "$mdtest" ] || { echo "bench/mdtest.sh: give --mdtest PATH (build hpc/ior: ./bootstrap && ./configure && make)" >&2; exit 2; }
[ -x "$bin" ] || { echo "bench/mdtest.sh: no $bin (cargo build --release)" >&2; exit 2; }
[ -z "$split" ] || command -v perf > /dev/null || { echo "bench/mdtest.sh: --split needs perf (apt-get install linux-perf)" >&2; exit 2; }
work=$(mktemp -d "$dir/mdtest-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
unique=""
[ "$share" = private ] && unique="-u"
# Rounds alternate which goes first: this VM switches speed regimes (30-40%)
# between invocations, so one run of each would compare regimes, not tools.
for round in $(seq "$rounds"); do
    profiled() {
        if [ -n "$split" ]; then
            perf record -q -e cpu-clock -F "$hz" -g -o "$work/$1.$round.perf" -- "${@:2}"
        else
            "${@:2}"
        fi
    }
    run_mdtest() {
        rm -rf "$work/mdtest"
        profiled mdtest "${mpirun[@]}" "$mdtest" -n "$items" $unique -F -i "$reps" \
            -d "$work/mdtest" > "$work/mdtest.$round.out" 2>&1
        if [ -n "$split" ]; then
            perf script -i "$work/mdtest.$round.perf" -F comm,tid,time,ip,sym,dso 2> /dev/null |
                python3 "$here/mdtest_split.py" "$hz" > "$work/mdtest.$round.split"
            rm "$work/mdtest.$round.perf"
        fi
    }
    run_fsscale() {
        mkdir -p "$work/fsscale"
        profiled fsscale "${launcher[@]}" "$bin" run mdtest -j "$ranks" --share "$share" --items "$items" "${shape[@]}" \
            -n "$reps" --dir "$work/fsscale" -o "$work/fsscale.$round.json" > /dev/null 2>&1
        rm -f "$work/fsscale.$round.perf"
    }
    if [ $((round % 2)) -eq 1 ]; then run_mdtest; run_fsscale; else run_fsscale; run_mdtest; fi
done
how="fsscale as processes"
[ ${#launcher[@]} -gt 0 ] && how="fsscale as MPI ranks"
[ ${#shape[@]} -gt 0 ] && how="$how, shaped: ${shape[*]}"
python3 - "$work" "$items" "$ranks" "$share" "$reps" "$rounds" "$how" "$split" <<'PY'
import json, statistics, sys
work, items, ranks, share, reps, rounds, how, split = sys.argv[1:]
phases = ["create", "stat", "read", "remove"]
labels = {"create": "File creation", "stat": "File stat", "read": "File read", "remove": "File removal"}
mdtest = {p: [] for p in phases}
ours = {p: [] for p in phases}
# Microseconds per item: (kernel, user) of each round.
mdtest_cpu = {p: [] for p in phases}
ours_cpu = {p: [] for p in phases}
per_round = int(items) * int(ranks)
for r in range(1, int(rounds) + 1):
    for line in open(f"{work}/mdtest.{r}.out"):
        for p in phases:
            if line.strip().startswith(labels[p]):
                mdtest[p].append(float(line.split()[-2]))  # Max, Min, Mean, Std Dev
    doc = json.load(open(f"{work}/fsscale.{r}.json"))
    for point in doc["points"]:
        phase = point["workload"].removeprefix("mdtest-")
        ours[phase].append(statistics.median(x["ops_per_s"] for x in point["runs"]))
        ours_cpu[phase].append((
            statistics.median(x["worker_cpu"]["sys_s"] / x["ops"] * 1e6 for x in point["runs"]),
            statistics.median(x["worker_cpu"]["user_s"] / x["ops"] * 1e6 for x in point["runs"]),
        ))
    if split:
        windows = json.load(open(f"{work}/mdtest.{r}.split"))
        for p in phases:
            kernel = [w["kernel_s"] / per_round * 1e6 for w in windows[p]]
            user = [w["user_s"] / per_round * 1e6 for w in windows[p]]
            if kernel:
                mdtest_cpu[p].append((statistics.mean(kernel), statistics.mean(user)))
print(f"{ranks} workers ({how}), {items} files each, {share} directories; {rounds} rounds, each: mdtest -i {reps} (its mean) and fsscale -n {reps} (its median), alternating which goes first")
print()
print("| phase | mdtest ops/s | fsscale ops/s | fsscale / mdtest (median of rounds) | range of the rounds' ratios |")
print("|---|---:|---:|---:|---:|")
for p in phases:
    ratios = [f / m for m, f in zip(mdtest[p], ours[p])]
    print(f"| {p} | {statistics.median(mdtest[p]):,.0f} | {statistics.median(ours[p]):,.0f} | {statistics.median(ratios):.2f} | {min(ratios):.2f}-{max(ratios):.2f} |")
if split:
    print()
    print("CPU per item (µs, median of rounds): kernel and user, as perf's samples inside mdtest's phases and fsscale's own per-worker CPU count them")
    print()
    print("| phase | mdtest kernel | fsscale kernel | fsscale / mdtest kernel (range) | mdtest user | fsscale user | mdtest's user share |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for p in phases:
        if not mdtest_cpu[p]:
            print(f"| {p} | no windows found | | | | | |")
            continue
        mk = [k for k, _ in mdtest_cpu[p]]
        mu = [u for _, u in mdtest_cpu[p]]
        fk = [k for k, _ in ours_cpu[p]]
        fu = [u for _, u in ours_cpu[p]]
        ratios = [f / m for m, f in zip(mk, fk)]
        share_user = statistics.median(u / (k + u) for k, u in mdtest_cpu[p])
        print(f"| {p} | {statistics.median(mk):.2f} | {statistics.median(fk):.2f} | {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) "
              f"| {statistics.median(mu):.2f} | {statistics.median(fu):.2f} | {share_user:.0%} |")
PY
