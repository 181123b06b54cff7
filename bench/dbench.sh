#!/usr/bin/env bash
# dbench's own loadfile, replayed by real dbench and by `fsscale run replay`
# on the same filesystem, alternately, at each client count:
#
#   bench/dbench.sh [ROUNDS] [SECONDS] [DIR] [LOADFILE]
#       (defaults: 3 10 /dev/shm /usr/share/dbench/client.txt)
#
# Prints two Markdown tables: the median MB/s (dbench's "Throughput", and
# fsscale's replay MB/s over ReadX + WriteX sizes, the bytes dbench counts)
# and ops/s at 1 and 2 clients; and mean latency per operation at 1 client
# (dbench's AvgLat against fsscale's per-operation mean). Needs dbench
# (Debian's dbench package) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-10}
dir=${3:-/dev/shm}
loadfile=${4:-/usr/share/dbench/client.txt}
command -v dbench >/dev/null || { echo "dbench is not installed (apt-get install dbench)" >&2; exit 1; }
cargo build --release --quiet
fsscale=$PWD/target/release/fsscale
work=$(mktemp -d "$dir/fsscale-dbench.XXXXXX")
trap 'rm -rf "$work"' EXIT

median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

echo "| clients | dbench MB/s | fsscale replay MB/s | dbench ops/s | fsscale ops/s |"
echo "|---:|---:|---:|---:|---:|"
for clients in 1 2; do
  dm=() fm=() dops=() fops=()
  for ((r = 0; r < rounds; r++)); do
    mkdir "$work/d"
    dbench -D "$work/d" -t "$seconds" -c "$loadfile" "$clients" >"$work/dbench.out" 2>&1
    rm -rf "$work/d"
    dm+=("$(awk '/^Throughput/ {print $2}' "$work/dbench.out")")
    # Operations: the sum of the table's counts over the run.
    dops+=("$(awk -v s="$seconds" '/^ [A-Za-z]+ +[0-9]+ +[0-9.]+ +[0-9.]+$/ {n += $2} END {print n / s}' "$work/dbench.out")")
    cp "$work/dbench.out" "$work/dbench-$clients.out"
    "$fsscale" run replay --trace "$loadfile" -j "$clients" -n 1 --duration "$seconds" --warmup 0 \
      --dir "$work" -o "$work/r.json" >"$work/fsscale-$clients.out" 2>/dev/null
    read -r mb ops < <(python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))["points"][0]["runs"][0]
print(run["bytes"] / run["elapsed_s"] / 1e6, run["ops_per_s"])' "$work/r.json")
    fm+=("$mb") fops+=("$ops")
  done
  printf '| %d | %.1f | %.1f | %.0f | %.0f |\n' "$clients" "$(median "${dm[@]}")" "$(median "${fm[@]}")" \
    "$(median "${dops[@]}")" "$(median "${fops[@]}")"
done

echo
echo "Mean latency per operation at 1 client (last round):"
echo
echo "| operation | dbench AvgLat | fsscale mean |"
echo "|---|---:|---:|"
python3 - "$work/dbench-1.out" "$work/fsscale-1.out" <<'EOF'
import re, sys
names = {"Qpathinfo": "QUERY_PATH_INFORMATION", "Qfileinfo": "QUERY_FILE_INFORMATION",
         "Qfsinfo": "QUERY_FS_INFORMATION", "Sfileinfo": "SET_FILE_INFORMATION", "Find": "FIND_FIRST"}
dbench = {}
for line in open(sys.argv[1]):
    m = re.match(r"^ (\w+) +(\d+) +([\d.]+) +([\d.]+)$", line)
    if m:
        dbench[names.get(m.group(1), m.group(1))] = float(m.group(3)) * 1000  # ms -> us
ours = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 4 and f[0] in dbench:
        ours[f[0]] = f[3]
for op, us in dbench.items():
    print(f"| {op} | {us:.1f}µs | {ours.get(op, '-')} |")
EOF
