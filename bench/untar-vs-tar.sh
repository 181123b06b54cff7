#!/usr/bin/env bash
# fsscale's built-in extractor against GNU tar, alternating, one at a time:
#   bench/untar-vs-tar.sh [DIR] [ROUNDS] [SCALE]      (defaults: /dev/shm 15 1)
# DIR may be a made filesystem's mount point (an ext4 loop mount, say).
# Prints both medians, their ratio (fsscale / tar time: under 1 is faster)
# and each round's ratio. fsscale's time is its own window; tar's includes
# starting the process (under a millisecond here).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/dev/shm}
rounds=${2:-15}
scale=${3:-1}
cargo build --release --quiet
fsscale=$PWD/target/release/fsscale
work=$(mktemp -d /dev/shm/fsscale-untar-bench.XXXXXX)
trap 'rm -rf "$work" "$dir/gnu-$$"' EXIT
"$fsscale" tree --scale "$scale" --tar "$work/tree.tar" >/dev/null
cat "$work/tree.tar" >/dev/null
ours=() gnu=()
for ((r = 0; r < rounds; r++)); do
  "$fsscale" run untar -j 1 -n 1 --warmup-runs 0 --tarball "$work/tree.tar" --dir "$dir" -o "$work/u.json" --force -q >/dev/null
  ours+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["runs"][0]["elapsed_s"])' "$work/u.json")")
  mkdir "$dir/gnu-$$"
  t0=$(date +%s.%N); tar xf "$work/tree.tar" -C "$dir/gnu-$$"; t1=$(date +%s.%N)
  gnu+=("$(python3 -c "print($t1 - $t0)")")
  rm -rf "$dir/gnu-$$"
done
python3 - "${ours[*]}" "${gnu[*]}" <<'PY'
import statistics as st, sys
o = [float(x) for x in sys.argv[1].split()]; g = [float(x) for x in sys.argv[2].split()]
r = [a / b for a, b in zip(o, g)]
print(f"fsscale median {st.median(o):.3f} s, GNU tar median {st.median(g):.3f} s: "
      f"ratio of medians {st.median(o) / st.median(g):.3f}, median of round ratios {st.median(r):.3f}")
print("rounds:", " ".join(f"{x:.2f}" for x in r))
PY
