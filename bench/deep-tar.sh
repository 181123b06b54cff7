#!/usr/bin/env bash
# A tarball DEPTH directories deep (default 5,000: paths of 10,000 bytes),
# whole runs of fsscale (scan, extraction, removal) against GNU tar's
# extraction of it (which refuses the entries past PATH_MAX and so does
# less), alternating:
#   bench/deep-tar.sh [DEPTH] [ROUNDS]       (defaults: 5000 5)
# Prints each tool's median wall time and their ratio. The issue's target:
# at most 2x GNU tar's time (the pre-run scan once took 91 s here).
set -euo pipefail
cd "$(dirname "$0")/.."
depth=${1:-5000}
rounds=${2:-5}
cargo build --release --quiet
fsscale=$PWD/target/release/fsscale
work=$(mktemp -d /dev/shm/fsscale-deep-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$work/deep.tar" "$depth" <<'PY'
import sys
def header(name, kind, size=0):
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:107] = b'0000755'; h[108:115] = b'0000000'; h[116:123] = b'0000000'
    h[124:135] = b'%011o' % size; h[136:147] = b'00000000000'; h[156:157] = kind
    h[257:263] = b'ustar\x00'; h[263:265] = b'00'; h[148:156] = b' ' * 8
    h[148:156] = b'%06o\x00 ' % sum(h)
    return bytes(h)
out = bytearray()
for k in range(1, int(sys.argv[2]) + 1):
    name = '/'.join(['d'] * k).encode() + b'\0'
    out += header(b'././@LongLink', b'L', len(name)) + name + b'\0' * (-len(name) % 512)
    out += header(b'x', b'5')
open(sys.argv[1], 'wb').write(out + b'\0' * 1024)
PY
mkdir "$work/dir"
ours=() gnu=()
for ((r = 0; r < rounds; r++)); do
  t0=$(date +%s.%N)
  "$fsscale" run untar -j 1 -n 1 --warmup-runs 0 --tarball "$work/deep.tar" --dir "$work/dir" -o "$work/u.json" --force -q >/dev/null
  t1=$(date +%s.%N)
  ours+=("$(python3 -c "print($t1 - $t0)")")
  mkdir "$work/gnu"
  t0=$(date +%s.%N); tar xf "$work/deep.tar" -C "$work/gnu" 2>/dev/null || true; t1=$(date +%s.%N)
  gnu+=("$(python3 -c "print($t1 - $t0)")")
  rm -rf "$work/gnu"
done
python3 - "${ours[*]}" "${gnu[*]}" <<'PY'
import statistics as st, sys
o = [float(x) for x in sys.argv[1].split()]; g = [float(x) for x in sys.argv[2].split()]
print(f"fsscale run (scan, extract, remove): median {st.median(o):.2f} s")
print(f"GNU tar xf:                          median {st.median(g):.2f} s")
print(f"ratio: {st.median(o) / st.median(g):.2f}")
PY
