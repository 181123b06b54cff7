#!/usr/bin/env bash
# The incremental build of a one-line change in each layer, timed: the
# workspace (four crates) against the one crate it was split from.
#
#   bench/incremental.sh [ROUNDS]      (default 3)
#
# For each revision it clones the repository into a directory of its own,
# builds `fsscale` once (dev profile, incremental, as a developer builds),
# then ROUNDS times per layer appends a private constant to one file of that
# layer and times `cargo build --bin fsscale` (wall seconds, the median).
# Prints a Markdown table. Nothing else may run beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
# One crate: 47a842f, the last commit before the workspace.
declare -A before=(
  [analysis]=src/stats/mod.rs
  [measuring]=src/workloads/metadata.rs
  [command line]=src/cli/mod.rs
)
declare -A after=(
  [analysis]=crates/fsscale-analysis/src/stats/mod.rs
  [measuring]=src/workloads/metadata.rs
  [command line]=crates/fsscale-cli/src/cli/mod.rs
)
work=$(mktemp -d /var/tmp/fsscale-incremental.XXXXXX)
trap 'rm -rf "$work"' EXIT

time_layer() {  # DIR FILE -> median seconds of ROUNDS builds after a one-line change
  local dir=$1 file=$2 times=()
  for ((r = 1; r <= rounds; r++)); do
    echo "const _INCREMENTAL_PROBE_$r: u32 = $RANDOM;" >>"$dir/$file"
    local start=$(date +%s.%N)
    (cd "$dir" && cargo build --bin fsscale --quiet)
    times+=("$(echo "$(date +%s.%N) - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((rounds + 1) / 2))p"
}

declare -A result
for side in before after; do
  dir=$work/$side
  git clone -q . "$dir"
  if [ "$side" = before ]; then git -C "$dir" checkout -q 47a842f; else git -C "$dir" checkout -q HEAD; fi
  (cd "$dir" && cargo build --bin fsscale --quiet)
  declare -n files=$side
  for layer in "${!files[@]}"; do
    result[$side/$layer]=$(time_layer "$dir" "${files[$layer]}")
  done
done
echo "| one-line change in | one crate (47a842f) | workspace ($(git rev-parse --short HEAD)) |"
echo "|---|---:|---:|"
for layer in analysis measuring "command line"; do
  printf '| %s | %.1f s | %.1f s |\n' "$layer" "${result[before/$layer]}" "${result[after/$layer]}"
done
