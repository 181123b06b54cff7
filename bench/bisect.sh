#!/usr/bin/env bash
# git bisect run with `fsscale gate` beside two CPU hogs: a repository of
# 16 commits whose measured program does 10% more CPU work from the 11th
# on (a slowdown no contention makes or hides), bisected BISECTIONS times
# (default 5) while two spinning processes share the machine's CPUs. Each
# bisection measures its references first (good at commit 1, bad at 16,
# --invocations of --runs runs each, alternately: by default 2 of 10; a
# revision gets --runs runs a round, up to --rounds rounds, by default 3),
# checks them with `gate --check good|bad`, then lets `git bisect run`
# call the gate, judging ops per CPU-second (--per-cpu). Figures in
# docs/BENCHMARKS.md ("Bisecting beside load").
#
#   bench/bisect.sh [--fsscale BIN] [--bisections N] [--hogs N] [--runs N]
#                   [--invocations N] [--rounds N]
#
# Prints one line per bisection (the commit named, revisions measured,
# skips, seconds) and how many named the 11th. Needs git and awk.
set -euo pipefail
cd "$(dirname "$0")/.."

fsscale=
bisections=5
hog_count=2
runs=10
invocations=2
rounds=3
while (($#)); do
  case $1 in
    --fsscale) fsscale=$2; shift 2 ;;
    --bisections) bisections=$2; shift 2 ;;
    --hogs) hog_count=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --invocations) invocations=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "bisect.sh: unknown option '$1' (see the comment at the top of bench/bisect.sh)" >&2; exit 2 ;;
  esac
done
if [[ -z $fsscale ]]; then
  cargo build --release --quiet
  fsscale=target/release/fsscale
fi
fsscale=$(realpath "$fsscale")
work=$(mktemp -d "${TMPDIR:-/var/tmp}/fsscale-bisect.XXXXXX")
hogs=()
cleanup() {
  ((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null
  git -C "$work/repo" bisect reset >/dev/null 2>&1 || true
  [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/repo" "$work/dir"
git() { command git -c user.name=bench -c user.email=bench@example.org -c init.defaultBranch=main -C "$work/repo" "$@"; }
git init -q
commits=()
for n in $(seq 1 16); do
  iterations=$((n >= 11 ? 11000000 : 10000000))
  printf 'awk "BEGIN { for (i = 0; i < %d; i++) s += i }"\n' "$iterations" >"$work/repo/work.sh"
  echo "$n" >"$work/repo/n"
  git add -A && git commit -q -m "commit $n"
  commits+=("$(git rev-parse HEAD)")
done
run_args=(command --cmd "sh $work/repo/work.sh" -j 1 -n "$runs" --warmup-runs 1 -q --dir "$work/dir")
for ((h = 0; h < hog_count; h++)); do
  sh -c 'while :; do :; done' & hogs+=($!)
done

right=0
for ((b = 1; b <= bisections; b++)); do
  start=$(date +%s)
  # Each reference --invocations times, alternately: an invocation's
  # offset beside load is as large as the runs' spread, and the gate pools
  # the files given.
  gate=("$fsscale" gate --per-cpu --max-rounds "$rounds")
  for ((i = 1; i <= invocations; i++)); do
    git checkout -q "${commits[0]}"
    "$fsscale" run "${run_args[@]}" --force -o "$work/good$i.json" >/dev/null 2>>"$work/runs.log"
    git checkout -q "${commits[15]}"
    "$fsscale" run "${run_args[@]}" --force -o "$work/bad$i.json" >/dev/null 2>>"$work/runs.log"
    gate+=(--good "$work/good$i.json" --bad "$work/bad$i.json")
  done
  checked=yes
  git checkout -q "${commits[0]}"
  "${gate[@]}" --check good -- "${run_args[@]}" 2>"$work/check.log" || checked="no (good: $(tail -1 "$work/check.log"))"
  git checkout -q "${commits[15]}"
  "${gate[@]}" --check bad -- "${run_args[@]}" 2>"$work/check.log" || checked="no (bad: $(tail -1 "$work/check.log"))"
  git bisect start "${commits[15]}" "${commits[0]}" >/dev/null
  git bisect run "${gate[@]}" -- "${run_args[@]}" >"$work/bisect.log" 2>&1 || true
  named=$(grep -o '^[0-9a-f]\{40\} is the first bad commit' "$work/bisect.log" | cut -c1-40 || true)
  git bisect reset >/dev/null 2>&1
  place=none
  for i in "${!commits[@]}"; do [[ ${commits[$i]} == "$named" ]] && place=$((i + 1)); done
  [[ $place == 11 ]] && right=$((right + 1))
  measured=$(grep -c '^this revision: ' "$work/bisect.log" || true)
  skips=$(grep -c '^this revision: skip' "$work/bisect.log" || true)
  echo "bisection $b: named commit $place; $measured revisions judged, $skips skipped; references checked: $checked; $(($(date +%s) - start)) s"
done
echo "named the 11th in $right of $bisections bisections (beside $hog_count CPU hogs; $invocations invocations a reference, $runs runs each, up to $rounds rounds)"
