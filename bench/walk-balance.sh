#!/usr/bin/env bash
# How evenly an MPI job's ranks share one tree's walk: `traverse --share
# shared` at 8 and 16 ranks on this machine's CPUs (oversubscribed on a small
# VM), ROUNDS jobs. The walk has no hub, so no rank should be much busier
# with messages than the others. On two CPUs how evenly work spreads is the
# scheduler's to decide, which is why this is a benchmark and not a test
# (the test checks that every entry is counted once at 2 and 4 ranks).
#
#   bench/walk-balance.sh [--fsscale BIN] [--rounds N]
#
# Prints, per job and point, the busiest rank's messages over the mean.
set -euo pipefail
cd "$(dirname "$0")/.."

fsscale=
rounds=3
while (($#)); do
  case $1 in
    --fsscale) fsscale=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "walk-balance.sh: unknown option '$1' (see the comment at the top of bench/walk-balance.sh)" >&2; exit 2 ;;
  esac
done
if [[ -z $fsscale ]]; then
  cargo build --release --quiet --features mpi
  fsscale=target/release/fsscale
fi
work=$(mktemp -d /dev/shm/walk-balance.XXXXXX)
trap 'rm -rf "$work"' EXIT
as_root=()
[ "$(id -u)" = 0 ] && as_root=(--allow-run-as-root)
for ((r = 1; r <= rounds; r++)); do
  mpirun "${as_root[@]}" --oversubscribe -n 16 "$fsscale" run traverse --share shared --scale 0.2 -j 8,16 \
    -n 1 --duration 0.05 --warmup 0 --warmup-runs 0 -q --dir "$work" -o "$work/walk.json" --force >/dev/null 2>&1
  python3 - "$work/walk.json" "$r" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["points"]:
    for run in p["runs"]:
        m = run["walk_messages"]
        mean = sum(m) / len(m)
        print(f"round {sys.argv[2]}: x{p['workers']}: busiest rank {max(m)} messages, mean {mean:.0f}, max/mean {max(m) / mean:.2f}")
PY
done
