#!/usr/bin/env bash
# Detection power of `fsscale compare`: plant a known slowdown in one side of
# a comparison and count what compare says about it, in three designs.
#
#   bench/power.sh [--design D] [--pairs N] [--slowdowns LIST] [--invocations K]
#                  [--fsscale BIN] [--keep DIR] [--noise-threshold PCT] [-- RUN ARGS...]
#
#   --design D        variants: one `fsscale run` per comparison with --variant a=true
#                     and --variant b= the plant (A/A: b=true), at run's defaults for
#                     variants (rounds until ±2%, at most 50), compare --variants a,b,
#                     every point of it counted; the plant is a per-syscall cost that
#                     does not depend on CPU contention: raw_syscalls:sys_enter enabled
#                     in a tracing instance of the bench's own with a filter that
#                     matches nothing (about 13% of stat's cost here); any level
#                     other than 0 in --slowdowns is that plant;
#                     unpaired (default): one `fsscale run` per side, compare A B;
#                     paired: one run per comparison with --variant base= and
#                     --variant slow=..., the setups moving fsscale into its side's
#                     cgroup before each run, compare --variants base,slow (by round);
#                     invocations: K runs per side, compare A1..AK --vs B1..BK
#   --pairs N         comparisons per slowdown (default 20)
#   --slowdowns LIST  planted slowdowns in percent, 0 meaning A/A (default 0,2,5,10)
#   --invocations K   invocations per side for --design invocations (default 3)
#   --base-cpu PCT    the base side's own CPU limit, percent of one CPU (default
#                     100: none). On a machine other work keeps busy, an
#                     unthrottled side already gets less than a CPU and a planted
#                     limit above what it gets plants nothing: give every side a
#                     limit below its share (e.g. 40 beside a 2-job compiler on 2
#                     CPUs), and a slowdown S limits that side to PCT·(100-S)%.
#   --hogs N          N CPU-bound loops (`while :; do :; done`) beside the whole bench
#                     (default 0), the load of issue 37's A/A: two on this 2-vCPU VM
#   --fsscale BIN     the binary to measure (default: target/release/fsscale, built)
#   --keep DIR        keep every results file in DIR
#   --noise-threshold PCT  compare's --noise-threshold (default: compare's, 2)
#   --test T          compare's --test (e.g. paired: with --design invocations,
#                     invocation k of each side pairs, as they run alternately)
#   RUN ARGS          what `fsscale run` measures (default: stat -j 1 --share private
#                     --dir /dev/shm, at fsscale's default runs and duration)
#
# The slowdown is real, not a fake in the code: the new side's whole process
# tree runs in a CPU cgroup whose CFS bandwidth limit (cgroup v2 cpu.max, or
# v1 cpu.cfs_quota_us where the cpu controller is bound to v1) gives it
# (100 - S)% of one CPU (of --base-cpu) per 10 ms period. A one-worker CPU-bound point then
# runs S% fewer ops/s; the table shows the change compare measured.
#
# Each of the N rounds runs base, a second base (for A/A) and one run per
# slowdown, in an order that rotates from round to round, so the machine's
# drift falls on every side alike; each comparison pairs sides of one round,
# as a developer's before/after pair would be. Needs root (cgroups).
#
# Prints a Markdown table, then one line per slowdown and one per comparison
# for scripts:
#   power S pairs worse no-difference too-noisy better too-few within-noise median-change
#   pair S change-percent
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=20
slowdowns=0,2,5,10
design=unpaired
invocations=3
base_cpu=100
hogs=0
fsscale=
keep=
compare_args=()
while (($#)); do
  case $1 in
    --pairs) pairs=$2; shift 2 ;;
    --design) design=$2; shift 2 ;;
    --invocations) invocations=$2; shift 2 ;;
    --base-cpu) base_cpu=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    --slowdowns) slowdowns=$2; shift 2 ;;
    --fsscale) fsscale=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --noise-threshold) compare_args+=(--noise-threshold "$2"); shift 2 ;;
    --test) compare_args+=(--test "$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "power.sh: unknown option '$1' (see the comment at the top of bench/power.sh)" >&2; exit 2 ;;
  esac
done
run_args=("$@")
case $design in
  unpaired | paired | invocations | variants) ;;
  *) echo "power.sh: --design $design: use variants, unpaired, paired or invocations" >&2; exit 2 ;;
esac
((${#run_args[@]})) || run_args=(stat -j 1 --share private --dir /dev/shm)

if [[ -z $fsscale ]]; then
  cargo build --release --quiet
  fsscale=target/release/fsscale
fi
[[ $(id -u) == 0 ]] || { echo "power.sh: needs root to make CPU cgroups" >&2; exit 2; }

hog_pids=()
plant=
for ((h = 0; h < hogs; h++)); do
  sh -c 'while :; do :; done' &
  hog_pids+=($!)
done

# 10 ms: a 0.5 s window spans 50 periods, so where a window starts in a
# period moves its share of CPU by 2% at most (at 100 ms, by 20%).
period_us=10000
work=$(mktemp -d /tmp/fsscale-power.XXXXXX)
groups=()
cleanup() {
  local g
  ((${#hog_pids[@]})) && kill "${hog_pids[@]}" 2>/dev/null
  [[ -n $plant && -d $plant ]] && { echo 0 >"$plant/events/raw_syscalls/sys_enter/enable"; rmdir "$plant"; } 2>/dev/null
  for g in "${groups[@]}"; do
    [[ -d $g ]] && rmdir "$g" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# make_group NAME QUOTA: a fresh CPU cgroup allowed QUOTA µs of CPU in every
# period (max: no limit); prints its directory.
make_group() {
  local name=$1 quota=$2 root
  root=/sys/fs/cgroup/unified
  if [[ -f $root/cgroup.controllers ]] && grep -qw cpu "$root/cgroup.controllers"; then
    grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu >"$root/cgroup.subtree_control"
    mkdir "$root/$name"
    echo "$quota $period_us" >"$root/$name/cpu.max"
  elif [[ -d /sys/fs/cgroup/cpu && ! -f /sys/fs/cgroup/cgroup.controllers ]]; then
    root=/sys/fs/cgroup/cpu
    mkdir "$root/$name"
    echo "$period_us" >"$root/$name/cpu.cfs_period_us"
    [[ $quota == max ]] && quota=-1
    echo "$quota" >"$root/$name/cpu.cfs_quota_us"
  elif [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    root=/sys/fs/cgroup
    grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu >"$root/cgroup.subtree_control"
    mkdir "$root/$name"
    echo "$quota $period_us" >"$root/$name/cpu.max"
  else
    echo "power.sh: no CPU cgroup controller (cgroup v2 cpu.max or v1 cpu) on this machine" >&2
    exit 2
  fi
  echo "$root/$name"
}

IFS=, read -r -a levels <<<"$slowdowns"
declare -A group
for s in base "${levels[@]}"; do
  [[ $design == variants ]] && break
  level=$s
  [[ $s == base ]] && level=0
  quota=$((period_us * base_cpu * (100 - level) / 10000))
  ((quota >= period_us)) && quota=max
  [[ -n ${group[$s]:-} ]] && continue
  group[$s]=$(make_group "fsscale-power-$$-$s" "$quota")
  groups+=("${group[$s]}")
done

# run_side SIDE NAME: one `fsscale run` inside SIDE's cgroup, into $work/NAME.json.
run_side() {
  local side=$1 name=$2
  sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "${group[$side]}" \
    "$fsscale" run "${run_args[@]}" -o "$work/$name.json" >"$work/$name.log" 2>&1 ||
    { echo "power.sh: fsscale run failed ($name); its output:" >&2; cat "$work/$name.log" >&2; exit 1; }
}

# run_variants SLOWDOWN NAME: one `fsscale run` of two variants, base and
# slow; each variant's setup moves fsscale (the setup shell's parent, and so
# the workers it forks next) into its side's cgroup.
run_variants() {
  local s=$1 name=$2
  sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "${group[base]}" \
    "$fsscale" run "${run_args[@]}" -o "$work/$name.json" \
    --variant "base=echo \$PPID > ${group[base]}/cgroup.procs" \
    --variant "slow=echo \$PPID > ${group[$s]}/cgroup.procs" >"$work/$name.log" 2>&1 ||
    { echo "power.sh: fsscale run failed ($name); its output:" >&2; cat "$work/$name.log" >&2; exit 1; }
}

# run_plant SLOWDOWN NAME: one `fsscale run` of variants a (nothing) and b
# (the plant, or nothing for A/A), into $work/NAME.json.
run_plant() {
  local s=$1 name=$2 b=true teardown=()
  if [[ $s != 0 ]]; then
    local event=$plant/events/raw_syscalls/sys_enter
    b="echo 'common_pid == 1' > $event/filter && echo 1 > $event/enable"
    teardown=(--variant-teardown "b=echo 0 > $event/enable")
  fi
  "$fsscale" run "${run_args[@]}" -o "$work/$name.json" --variant a=true --variant "b=$b" "${teardown[@]}" \
    >"$work/$name.log" 2>&1 ||
    { echo "power.sh: fsscale run failed ($name); its output:" >&2; cat "$work/$name.log" >&2; exit 1; }
}

# record_all S JSON: every row's verdict and change.
record_all() {
  local s=$1 json=$2 verdict change
  while read -r verdict; do
    count[$s,$verdict]=$((${count[$s,$verdict]:-0} + 1))
  done < <(sed -n 's/.*"verdict": "\(.*\)".*/\1/p' <<<"$json")
  while read -r change; do
    changes+=("$s $change")
  done < <(sed -n 's/.*"change_pct": \([-0-9.e]*\).*/\1/p' <<<"$json")
}

# verdict JSON: the first row's verdict and change.
record() {
  local s=$1 json=$2 verdict change
  verdict=$(sed -n 's/.*"verdict": "\(.*\)".*/\1/p' <<<"$json" | head -1)
  change=$(sed -n 's/.*"change_pct": \([-0-9.e]*\).*/\1/p' <<<"$json" | head -1)
  count[$s,$verdict]=$((${count[$s,$verdict]:-0} + 1))
  changes+=("$s $change")
}

declare -A count
changes=()
if [[ $design == variants ]]; then
  # A tracing instance of the bench's own (not named as fsscale names its
  # instances, which `fsscale cleanup` removes when nobody holds them).
  plant=/sys/kernel/tracing/instances/power-plant-$$
  mkdir "$plant"
fi
for ((r = 0; r < pairs; r++)); do
  case $design in
    variants)
      for s in "${levels[@]}"; do
        run_plant "$s" "variants-$s-$r"
        record_all "$s" "$("$fsscale" compare "$work/variants-$s-$r.json" --variants a,b --format json "${compare_args[@]}")"
      done
      ;;
    paired)
      for s in "${levels[@]}"; do
        run_variants "$s" "pair-$s-$r"
        record "$s" "$("$fsscale" compare "$work/pair-$s-$r.json" --variants base,slow --format json "${compare_args[@]}")"
      done
      ;;
    unpaired | invocations)
      sides=(base "${levels[@]}")
      # Rotate the order by one each round, and every other block of rotations
      # run it backwards (a Williams design): each side then follows every other
      # side equally often. Rotations alone put base right after the slowest side
      # in 2 of 3 rounds, and what ran just before carries over on this VM: the
      # A/A pair then measured +5% to +6%.
      n=${#sides[@]}
      k=$((r % n))
      order=("${sides[@]:k}" "${sides[@]:0:k}")
      if (((r / n) % 2 == 1)); then
        reversed=()
        for ((i = ${#order[@]} - 1; i >= 0; i--)); do reversed+=("${order[i]}"); done
        order=("${reversed[@]}")
      fi
      # Invocations: K of each side, the sides' turns interleaved (side 0,
      # unthrottled, is the A/A pair's second base).
      per=1
      [[ $design == invocations ]] && per=$invocations
      for ((i = 0; i < per; i++)); do
        for s in "${order[@]}"; do
          run_side "$s" "$s-$r-$i"
        done
      done
      for s in "${levels[@]}"; do
        bases=() news=()
        for ((i = 0; i < per; i++)); do bases+=("$work/base-$r-$i.json"); news+=("$work/$s-$r-$i.json"); done
        if [[ $design == unpaired ]]; then
          json=$("$fsscale" compare "${bases[0]}" "${news[0]}" --format json "${compare_args[@]}")
        else
          json=$("$fsscale" compare "${bases[@]}" --vs "${news[@]}" --format json "${compare_args[@]}")
        fi
        record "$s" "$json"
      done
      ;;
  esac
  if [[ -n $keep ]]; then mkdir -p "$keep" && cp "$work"/*-"$r"*.json "$keep"/; fi
  echo "round $((r + 1))/$pairs done" >&2
done

median_change() {
  printf '%s\n' "${changes[@]}" | awk -v s="$1" '$1 == s { print $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%+.1f%%", m }'
}

echo "design: $design$([[ $design == invocations ]] && echo ", $invocations per side"), base side limited to $base_cpu% of a CPU"
echo "| planted slowdown | $([[ $design == variants ]] && echo points || echo comparisons) | worse | within noise | no difference proven | too noisy | better | median change measured |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in "${levels[@]}"; do
  label="$s%"; [[ $s == 0 ]] && label="none (A/A)"
  [[ $design == variants && $s != 0 ]] && label="filtered raw_syscalls tracepoint"
  counted=$pairs
  if [[ $design == variants ]]; then
    # Every point of every comparison.
    counted=0
    for v in worse within-noise no-difference-proven too-noisy better too-few-runs; do
      counted=$((counted + ${count[$s,$v]:-0}))
    done
  fi
  echo "| $label | $counted | ${count[$s,worse]:-0} | ${count[$s,within-noise]:-0} | ${count[$s,no-difference-proven]:-0} | ${count[$s,too-noisy]:-0} | ${count[$s,better]:-0} | $(median_change "$s") |"
done
for s in "${levels[@]}"; do
  echo "power $s $pairs ${count[$s,worse]:-0} ${count[$s,no-difference-proven]:-0} ${count[$s,too-noisy]:-0} ${count[$s,better]:-0} ${count[$s,too-few-runs]:-0} ${count[$s,within-noise]:-0} $(median_change "$s")"
done
for c in "${changes[@]}"; do
  echo "pair $c"
done
