#!/usr/bin/env bash
# Macro workloads against the standard tools, on tmpfs, one at a time:
#   untar:    fsscale's built-in extractor vs GNU tar, 1 worker, the scale-S tarball
#   traverse: 1 worker vs `find DIR | wc -l`; workers = cores (threads, shared) vs `fdfind -u`
#
#   bench/macro.sh [ROUNDS] [SCALE] [DIR]      (defaults: 5 1 /dev/shm)
#
# Needs GNU tar and find; fdfind (Debian's fd-find) for the parallel walk.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
scale=${2:-1}
dir=${3:-/dev/shm}
cargo build --release --quiet
fsscale=$PWD/target/release/fsscale
work=$(mktemp -d "$dir/fsscale-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
now() { date +%s.%N; }
elapsed_s() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["runs"][0]["elapsed_s"])' "$1"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

"$fsscale" tree --scale "$scale" --tar "$work/tree.tar" >/dev/null
entries=$(tar tf "$work/tree.tar" | wc -l)
cat "$work/tree.tar" >/dev/null

ours=() gnu=()
for ((r = 0; r < rounds; r++)); do
  "$fsscale" run untar -j 1 -n 1 --tarball "$work/tree.tar" --dir "$work" -o "$work/u.json" >/dev/null 2>&1
  ours+=("$(elapsed_s "$work/u.json")")
  mkdir "$work/gnu"
  t0=$(now); tar xf "$work/tree.tar" -C "$work/gnu"; t1=$(now)
  gnu+=("$(python3 -c "print($t1 - $t0)")")
  rm -rf "$work/gnu"
done
mo=$(median "${ours[@]}"); mg=$(median "${gnu[@]}")

mkdir "$work/tree" && tar xf "$work/tree.tar" -C "$work/tree"
walk=$(find "$work/tree" | wc -l)
t1s=() f1s=() tns=() fds=()
for ((r = 0; r < rounds; r++)); do
  "$fsscale" run traverse -j 1 -n 1 --share same --tree "$work/tree" --dir "$work" -o "$work/t.json" >/dev/null 2>&1
  t1s+=("$(elapsed_s "$work/t.json")")
  t0=$(now); find "$work/tree" | wc -l >/dev/null; t1=$(now)
  f1s+=("$(python3 -c "print($t1 - $t0)")")
  "$fsscale" run traverse -j "$cores" -n 1 --mode thread --share shared --tree "$work/tree" --dir "$work" -o "$work/t.json" >/dev/null 2>&1
  tns+=("$(elapsed_s "$work/t.json")")
  if command -v fdfind >/dev/null; then
    t0=$(now); fdfind -u . "$work/tree" | wc -l >/dev/null; t1=$(now)
    fds+=("$(python3 -c "print($t1 - $t0)")")
  fi
done
m1=$(median "${t1s[@]}"); mf=$(median "${f1s[@]}"); mn=$(median "${tns[@]}")
rate() { python3 -c "print(f'{$1 / $2:,.0f}')"; }
echo "tarball: scale $scale, $entries entries; tree walk: $walk entries (find, with the top directory); $rounds rounds, medians"
echo
echo "| what | fsscale | reference | fsscale / reference speed |"
echo "|---|---:|---:|---:|"
echo "| untar, 1 worker vs GNU tar xf | $(printf %.3f "$mo") s | $(printf %.3f "$mg") s | $(python3 -c "print(f'{$mg / $mo:.2f}')") |"
echo "| traverse, 1 worker vs find \| wc -l | $(printf %.3f "$m1") s ($(rate "$entries" "$m1") entries/s) | $(printf %.3f "$mf") s ($(rate "$walk" "$mf") entries/s) | $(python3 -c "print(f'{$mf / $m1:.2f}')") |"
if [ ${#fds[@]} -gt 0 ]; then
  md=$(median "${fds[@]}")
  echo "| traverse, $cores threads shared vs fdfind -u | $(printf %.3f "$mn") s ($(rate "$entries" "$mn") entries/s) | $(printf %.3f "$md") s ($(rate "$walk" "$md") entries/s) | $(python3 -c "print(f'{$md / $mn:.2f}')") |"
fi
