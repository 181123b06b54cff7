#!/usr/bin/env bash
# What `compare` lists as moved in two setups a kernel developer meets:
#   hogs     stat -j 2 quiet against the same beside two CPU hogs;
#   dirsync  creat-unlink on a made ext4 against one mounted dirsync (root).
# Detection depends on the machine, so it is a benchmark, not a test: the
# unit tests hold the logic on simulated runs. Nothing else should run
# beside it.
#
#   bench/moved.sh [FSSCALE] [RUNS]        (default target/debug/fsscale, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
fsscale=$(realpath "${1:-target/debug/fsscale}")
runs=${2:-5}
work=$(mktemp -d /var/tmp/fsscale-moved.XXXXXX)
hogs=()
cleanup() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
run() { "$fsscale" run --warmup-max 0 -n "$runs" --duration 0.5 "$@" >/dev/null 2>&1; }
moved() {  # BASE NEW: the moved list, one line a stat
  "$fsscale" compare "$1" "$2" --format json >"$work/compare.json"
  python3 - "$work/compare.json" <<'PY'
import json, sys
for row in json.load(open(sys.argv[1]))[0]["rows"]:
    moved = row.get("moved", [])
    print(f"  {row['workload']} {row['share']} x{row['workers']}: figure {row['change_pct']:+.1f}%, {len(moved)} stats moved")
    for m in moved[:12]:
        change = f"{m['change_pct']:+.1f}%" if m["change_pct"] is not None else ("new" if m["base_mean"] == 0 else "no %")
        print(f"    {m['base_mean']:12.4g}  {change:>10}  {m['new_mean']:12.4g}  {m['stat']} per {m['per']}  (q {m['q_value']:.2g})")
PY
}

echo "## stat -j 2, quiet against beside two CPU hogs"
run stat -j 2 --share private --dir /dev/shm -o "$work/quiet.json"
for _ in 1 2; do (while :; do :; done) & hogs+=($!); done
run stat -j 2 --share private --dir /dev/shm -o "$work/hogs.json"
for pid in "${hogs[@]}"; do kill "$pid"; done
hogs=()
moved "$work/quiet.json" "$work/hogs.json"

echo "## creat-unlink -j 1 on a made ext4, plain against dirsync"
run creat-unlink -j 1 --share private --fs ext4 -o "$work/plain.json"
run creat-unlink -j 1 --share private --fs ext4:dirsync -o "$work/dirsync.json"
moved "$work/plain.json" "$work/dirsync.json"
