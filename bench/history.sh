#!/usr/bin/env bash
# The history store at scale: imports N results files of the default suite
# (synthetic copies of one real run, default 10,000) and times the import
# and the queries. Figures in docs/BENCHMARKS.md ("History at scale").
#
#   bench/history.sh [N]     FSSCALE=path/to/fsscale to use another binary
#
# Needs python3 and about 0.4 MB of disk per file (the files, and the store,
# which keeps every document compressed), under $TMPDIR (default /var/tmp).
set -euo pipefail
n=${1:-10000}
fsscale=${FSSCALE:-target/release/fsscale}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/fsscale-history-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/files" "$work/dir"

echo "one real run of the default suite (10 runs a point, 50 ms each)..." >&2
"$fsscale" run -n 10 --duration 0.05 --warmup 0 --warmup-runs 0 -q --dir "$work/dir" -o "$work/base.json" >/dev/null

# 100 variants of it, each run's figures (ops/s, and the workers' CPU
# time inversely) moved by one offset (1.5%
# relative, as invocations differ here), then N files drawn from them with
# their own run id, start and revision; in the last 100, every figure is
# 5% lower (a step for `history changes` to find in every series).
python3 - "$work" "$n" <<'PY'
import json, random, sys
work, n = sys.argv[1], int(sys.argv[2])
base = json.load(open(f"{work}/base.json"))
rng = random.Random(1)
variants = []
for v in range(100):
    for step in (1.0, 0.95):
        doc = json.loads(json.dumps(base))
        offset = 1 + 0.015 * rng.gauss(0, 1)
        for p in doc["points"]:
            for r in p["runs"]:
                r["ops_per_s"] *= offset * step
                # ops per CPU-second step too (series judged on them where busy)
                for k in ("user_s", "sys_s"):
                    r["worker_cpu"][k] /= offset * step
        doc["run_id"] = "RUNID"
        doc["started_at"] = "STARTED"
        doc["rev"] = "REVISION"
        variants.append(json.dumps(doc))
for i in range(n):
    text = variants[2 * rng.randrange(100) + (1 if i >= n - 100 else 0)]
    day, minute = divmod(i, 1440)
    started = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"
    text = text.replace('"RUNID"', f'"bench-{i:06d}"').replace('"STARTED"', f'"{started}"').replace('"REVISION"', f'"r{i}"')
    open(f"{work}/files/{i:06d}.json", "w").write(text)
PY
echo "$n files, $(du -sh "$work/files" | cut -f1)" >&2

db="$work/history.sqlite"
start=$(date +%s.%N)
find "$work/files" -name '*.json' | sort | xargs -n 500 "$fsscale" history add --history-db "$db" >/dev/null
end=$(date +%s.%N)
python3 -c "import sys; t=float(sys.argv[2])-float(sys.argv[1]); print(f'import: {int(sys.argv[3])} files in {t:.1f} s, {int(sys.argv[3])/t:.0f} files/s')" "$start" "$end" "$n"
echo "store: $(du -sh "$db" | cut -f1)"

time_it() {
  local what=$1; shift
  local s e
  s=$(date +%s.%N)
  "$@" >"$work/out.txt"
  e=$(date +%s.%N)
  python3 -c "import sys; print(f'{sys.argv[1]}: {float(sys.argv[3])-float(sys.argv[2]):.3f} s')" "$what" "$s" "$e"
}
time_it "show one series, all $n results" "$fsscale" history show --history-db "$db" -w stat -j 1 --share private --last 100000
time_it "show one series, its last 200" "$fsscale" history show --history-db "$db" -w stat -j 1 --share private
time_it "changes in one series, its last 200" "$fsscale" history changes --history-db "$db" -w stat -j 1 --share private
time_it "changes in one series, its last 1000" "$fsscale" history changes --history-db "$db" -w stat -j 1 --share private --last 1000
time_it "changes in every series, the last 200 of each" "$fsscale" history changes --history-db "$db"
grep -E '^(no step|[0-9]+ steps?) ' "$work/out.txt"
