#!/usr/bin/env bash
# fsscale's BPF profiles against bpftrace's one-liners on the same runs:
# lock waits, sleeps and their sites, and the in-kernel latency histogram.
#
#   bench/agreement.sh [--fsscale BIN] [--dir DIR] [--duration S]
#
# For each profile, bpftrace runs beside one fsscale run (-n 1, no warm-up,
# thread mode, so that the workers are the threads named fsscale-w*) and
# counts the same tracepoints for those threads. bpftrace sees the workers'
# whole lives, fsscale only the timed window: the workers' few events around
# the window's edges (the start barrier's futex sleeps, the last op) are in
# bpftrace's figures only, so its counts may be slightly higher.
#
# Prints a Markdown table. Needs root and bpftrace; builds nothing (cargo build --release).
set -euo pipefail
bin=target/release/fsscale
dir=/dev/shm
duration=1
while [ $# -gt 0 ]; do
    case "$1" in
        --fsscale) bin=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        *) echo "bench/agreement.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "bench/agreement.sh: no $bin (cargo build --release)" >&2; exit 2; }
command -v bpftrace >/dev/null || { echo "bench/agreement.sh: needs bpftrace (apt-get install bpftrace)" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# side NAME 'BPFTRACE PROGRAM' FSSCALE-ARGS...: both on one run; leaves $work/NAME.bt and $work/NAME.json.
side() {
    local name=$1 program=$2
    shift 2
    bpftrace -f json -e "$program" >"$work/$name.bt" 2>"$work/$name.bt.err" &
    local tracer=$!
    # Attached once it says so.
    for _ in $(seq 100); do
        grep -q attached_probes "$work/$name.bt" 2>/dev/null && break
        sleep 0.1
    done
    "$bin" run "$@" --mode thread -n 1 --warmup-runs 0 --warmup 0 --warmup-max 0 --duration "$duration" --dir "$dir" \
        -o "$work/$name.json" --force -q >/dev/null
    kill -INT "$tracer"
    wait "$tracer" || true
}

workers='strncmp(comm, "fsscale-w", 9) == 0'

side locks "
tracepoint:lock:contention_begin /$workers && !@start[tid]/ { @start[tid] = nsecs; @lock[tid] = args->lock_addr; }
tracepoint:lock:contention_end /@start[tid] && @lock[tid] == args->lock_addr/ {
    @waits = count(); @wait_ns = sum(nsecs - @start[tid]); delete(@start[tid]); delete(@lock[tid]);
}" creat-unlink -j 2 --share shared --profile locks

side offcpu "
tracepoint:sched:sched_switch /strncmp(args->prev_comm, \"fsscale-w\", 9) == 0 && args->prev_state == 2/ {
    @off[args->prev_pid] = nsecs; @stack[args->prev_pid] = kstack;
}
tracepoint:sched:sched_wakeup /@off[args->pid]/ { @woken[args->pid] = nsecs; }
tracepoint:sched:sched_switch /@off[args->next_pid] && @woken[args->next_pid]/ {
    @sleeps = count(); @asleep_ns = sum(@woken[args->next_pid] - @off[args->next_pid]);
    @sites[@stack[args->next_pid]] = count();
    delete(@off[args->next_pid]); delete(@woken[args->next_pid]); delete(@stack[args->next_pid]);
}" fsync -j 2 --share private --fs ext4 --profile offcpu

side latency "
tracepoint:raw_syscalls:sys_enter /$workers/ { @t[tid] = nsecs; @nr[tid] = args->id; }
tracepoint:raw_syscalls:sys_exit /@t[tid] && @nr[tid] == 257/ { @openat = hist(nsecs - @t[tid]); }
tracepoint:raw_syscalls:sys_exit /@t[tid]/ { delete(@t[tid]); delete(@nr[tid]); }
" open-close -j 1 --share private --profile latency

python3 - "$work" <<'PY'
import json, math, sys

work = sys.argv[1]

def bt(name):
    """bpftrace's maps from its JSON lines: name -> value."""
    maps = {}
    for line in open(f"{work}/{name}.bt"):
        line = line.strip()
        if not line.startswith("{"):
            continue
        doc = json.loads(line)
        if doc.get("type") in ("map", "hist", "stats"):
            maps.update(doc["data"])
    return maps

def fs(name):
    return json.load(open(f"{work}/{name}.json"))["points"][0]["runs"][0]

def pct(a, b):
    return f"{100 * (a - b) / b:+.2f}%" if b else "n/a"

print("| profile | figure | fsscale | bpftrace | difference |")
print("|---|---|---:|---:|---:|")
# Locks.
run, maps = fs("locks"), bt("locks")
locks = run["locks"]
print(f"| locks (creat-unlink, 2 threads, one directory) | waits | {locks['contentions']:,} | {maps.get('@waits', 0):,} | {pct(locks['contentions'], maps.get('@waits', 0))} |")
print(f"| | wait, s | {locks['wait_s']:.4f} | {maps.get('@wait_ns', 0) / 1e9:.4f} | {pct(locks['wait_s'], maps.get('@wait_ns', 0) / 1e9)} |")
# Sleeps: uninterruptible ones (fsync's), and the top sites' shares.
run, maps = fs("offcpu"), bt("offcpu")
off = run["offcpu"]
d_sleeps = sum(s["count"] for s in off["sites"] if s["state"] == "uninterruptible")
d_asleep = sum(s["asleep_s"] for s in off["sites"] if s["state"] == "uninterruptible")
print(f"| offcpu (fsync on ext4, 2 threads) | uninterruptible sleeps | {d_sleeps:,} | {maps.get('@sleeps', 0):,} | {pct(d_sleeps, maps.get('@sleeps', 0))} |")
print(f"| | asleep to the wakeup, s | {d_asleep:.3f} | {maps.get('@asleep_ns', 0) / 1e9:.3f} | {pct(d_asleep, maps.get('@asleep_ns', 0) / 1e9)} |")
stacks = maps.get("@sites", {})
total_bt = sum(stacks.values()) or 1
for site in [s for s in off["sites"] if s["state"] == "uninterruptible"][:3]:
    # The site's middle function (its first caller) names it in bpftrace's stacks.
    frames = site["site"].split(" ← ")
    key = frames[1] if len(frames) > 1 else frames[0]
    bt_share = sum(n for stack, n in stacks.items() if f"\n        {key}+" in "\n" + stack or f" {key}+" in stack) / total_bt
    print(f"| | share of sleeps at {site['site']} | {site['count'] / max(d_sleeps, 1):.1%} | {bt_share:.1%} | |")
# Latency: openat's median log2 bucket (bpftrace's hist() resolves no finer).
run, maps = fs("latency"), bt("latency")
call = next(c for c in run["kernel_latency"]["calls"] if c["call"] == "openat")
def median_slot(counts):
    total, seen = sum(counts), 0
    for i, n in enumerate(counts):
        seen += n
        if seen * 2 >= total:
            return i
hist = maps.get("@openat", [])
bt_counts = [0] * 64
for bucket in hist:
    low = bucket.get("min", 0)
    bt_counts[0 if low < 1 else int(math.log2(low))] += bucket["count"]
def bucket_low(b):
    # fsscale's log-linear layout (stats::histogram): 16 buckets a power of two.
    return b if b < 32 else (16 + (b & 15)) << ((b >> 4) - 1)
fs_log2 = [0] * 64
for b, n in call["ns"]["buckets"]:
    low = bucket_low(b)
    fs_log2[0 if low < 1 else int(math.log2(low))] += n
fs_slot, bt_slot = median_slot(fs_log2), median_slot(bt_counts)
print(f"| latency (open-close, 1 thread) | openat calls | {call['count']:,} | {sum(bt_counts):,} | {pct(call['count'], sum(bt_counts))} |")
print(f"| | openat median, log2 bucket | [{2**fs_slot}, {2**(fs_slot + 1)}) ns | [{2**bt_slot}, {2**(bt_slot + 1)}) ns | {fs_slot - bt_slot:+d} bucket(s) |")
PY
