#!/usr/bin/env bash
# Runs the whole suite as CI does (.ci/run) K times under each of three
# conditions, and reports every test that failed, with its output:
#   hogs      two CPU hogs (one per CPU of this 2-CPU VM), all the time;
#   profiled  a live profiled run beside it, again and again:
#             fsscale run stat creat-unlink --fs ext4 --profile locks,offcpu;
#   memory    a process holding all but 1 GiB of the memory available.
# The goal: no failure in 5 runs of each.
#
#   bench/flake.sh [--runs K] [--conditions hogs,profiled,memory] [--logs DIR]
#
# Needs root (the suite's own needs; an ext4 made for the profiled run).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
conditions=hogs,profiled,memory
logs=
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --conditions) conditions=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    *) echo "flake.sh: unknown option '$1' (see the comment at the top of bench/flake.sh)" >&2; exit 2 ;;
  esac
done
logs=${logs:-$(mktemp -d /var/tmp/flake.XXXXXX)}
mkdir -p "$logs"
work=$(mktemp -d /var/tmp/flake-work.XXXXXX)
# The profiled run's binary, a copy: the suite's builds replace target/debug's.
cargo build --quiet
fsscale=$work/fsscale
cp target/debug/fsscale "$fsscale"
beside=()
stop_beside() {
  for pid in "${beside[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  for pid in "${beside[@]}"; do wait "$pid" 2>/dev/null || true; done
  beside=()
}
trap 'stop_beside; rm -rf "$work"' EXIT
mkdir "$work/dir"

start_beside() {  # start_beside CONDITION: what runs beside the suite, each in a process group of its own
  case $1 in
    hogs)
      for _ in 1 2; do setsid sh -c 'while :; do :; done' & beside+=($!); done ;;
    profiled)
      setsid sh -c "while :; do '$fsscale' run stat creat-unlink --fs ext4 --profile locks,offcpu -j 2 -n 3 \
        --duration 2 -q --dir '$work/dir' -o '$work/profiled.json' --force >/dev/null 2>&1 || sleep 1; done" &
      beside+=($!) ;;
    memory)
      # All that is available but 1 GiB, touched page by page so it is resident.
      setsid python3 -c '
import mmap, time
avail = next(int(l.split()[1]) * 1024 for l in open("/proc/meminfo") if l.startswith("MemAvailable:"))
size = max(avail - (1 << 30), 0)
held = mmap.mmap(-1, size)
for offset in range(0, size, 4096):
    held[offset] = 1
print(f"holding {size >> 20} MiB", flush=True)
while True:
    time.sleep(60)
' & beside+=($!)
      sleep 20 ;;
    *) echo "flake.sh: unknown condition '$1' (hogs, profiled, memory)" >&2; exit 2 ;;
  esac
}

declare -A failed_runs
IFS=, read -r -a wanted <<<"$conditions"
for condition in "${wanted[@]}"; do failed_runs[$condition]=0; done
# Round by round, each condition in turn: a harness stopped early (it takes
# hours) has as many runs of each condition, give or take one.
for ((k = 1; k <= runs; k++)); do
  for condition in "${wanted[@]}"; do
    log="$logs/$condition-$k.log"
    start_beside "$condition"
    started=$SECONDS
    status=0
    .ci/run >"$log" 2>&1 || status=$?
    stop_beside
    failed=$(sed -n 's/^test \(.*\) \.\.\. FAILED.*/\1/p' "$log" | sort -u)
    echo "$condition run $k: exit $status in $((SECONDS - started)) s, $(grep -c . <<<"$failed" || true) failed test(s)"
    if [ "$status" != 0 ]; then
      failed_runs[$condition]=$((failed_runs[$condition] + 1))
      # Each failed test's own output, as libtest printed it.
      for test in $failed; do
        echo "  FAILED $test:"
        awk -v t="---- $test stdout ----" '$0 == t {on = 1; next} on && /^---- .* stdout ----$/ {exit} on && /^failures:$/ {exit} on' "$log" | sed 's/^/    /' | head -40
      done
      [ -n "$failed" ] || tail -20 "$log" | sed 's/^/    /'
    fi
  done
done
echo "runs with a failure (logs in $logs):"
for condition in "${wanted[@]}"; do
  echo "  $condition: ${failed_runs[$condition]} of $runs"
done
