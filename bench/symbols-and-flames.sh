#!/usr/bin/env bash
# fsscale's flame graphs and symbol tables against inferno's and blazesym's:
# the measurement behind docs/ARCHITECTURE.md ("Flame graphs and symbols").
#
#   bench/symbols-and-flames.sh [FSSCALE]     (root; default target/debug/fsscale)
#
# Builds bench/symbols-and-flames (which compiles fsscale's own flame graph,
# kallsyms and ELF symbol code from their files, unchanged), then:
#   flames  a real on-CPU profile (creat-unlink, 2 workers, 1 s) and two
#           synthetic ones at the results' bound (20,000 stacks);
#   kernel  this kernel's /proc/kallsyms, plus two module functions;
#   user    FSSCALE (an unstripped debug build: 100 MB) and libc.
# Each timing is the best of 3-7; nothing else should run beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
fsscale=$(realpath "${1:-target/debug/fsscale}")
[[ -x $fsscale ]] || { echo "no fsscale at $fsscale: cargo build first, or name one" >&2; exit 2; }
work=$(mktemp -d /var/tmp/fsscale-symbols-and-flames.XXXXXX)
trap 'rm -rf "$work"' EXIT
CARGO_TARGET_DIR=$work/target cargo build --release --quiet --manifest-path bench/symbols-and-flames/Cargo.toml
bench=$work/target/release/symbols-and-flames

"$fsscale" run creat-unlink -j 2 -d 1s --runs 1 --profile cpu --dir /dev/shm -o "$work/profile.json" >/dev/null 2>&1
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
points = json.load(open(f"{work}/profile.json"))["points"]
for name, point in zip(["base", "new"], points):
    folded = point["runs"][0]["cpu_profile"]["folded"]
    with open(f"{work}/{name}.folded", "w") as out:
        out.writelines(f"{stack} {n}\n" for stack, n in folded.items())
PY
"$bench" synthetic 20000 1 >"$work/synthetic-base.folded"
"$bench" synthetic 20000 2 >"$work/synthetic-new.folded"

echo "## flame graphs: a real profile (the shared point against the private one)"
"$bench" flames "$work/new.folded" "$work/base.folded"
echo "## flame graphs: 20,000 stacks (the results' bound)"
"$bench" flames "$work/synthetic-new.folded" "$work/synthetic-base.folded"
echo "## kernel symbols"
"$bench" kernel
echo "## user symbols"
cp "$fsscale" "$work/fsscale-copy"   # a file no other run rebuilds meanwhile
"$bench" user "$work/fsscale-copy"
"$bench" user "$(ldd "$fsscale" | awk '/libc.so/ {print $3}')"
