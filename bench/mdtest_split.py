#!/usr/bin/env python3
"""Where mdtest's time per item goes: kernel or user, phase by phase.

Reads `perf script -F comm,tid,time,ip,sym,dso` of `perf record -e cpu-clock
-F HZ -g` over an mdtest run (-F files, any -i) on standard input and prints
one JSON object: per phase and iteration, the CPU seconds mdtest's ranks
spent in the kernel and in user space inside their windows of the phase.

A rank's window of a phase runs from its first to its last sample whose kernel call
chain holds the phase's system call: newfstatat (stat), unlink (remove),
openat/close after a stat (read), openat/close from a sample that creates
a file until the stat (create; the MPI start-up's opens create nothing and
are left out). Every sample of the rank inside its window counts,
whatever it was doing: mdtest's own per-item work (building the path,
clearing buffers, taking time stamps) is what the user share measures.

    perf script ... | bench/mdtest_split.py HZ
"""
import json
import sys

MIN_MARKERS = 20
CREATING = ("shmem_mknod", "shmem_create", "vfs_create", "lookup_open")


def samples(lines):
    """(comm, tid, time, frames) of each sample, leaf frame first."""
    head, frames = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if head:
                yield (*head, frames)
            head, frames = None, []
        elif not line.startswith(("\t", " ")):
            comm, tid, time = line.split()[:3]
            head = (comm, int(tid), float(time.rstrip(":")))
        else:
            frames.append(line.strip())
    if head:
        yield (*head, frames)


def marker(frames, last):
    """The phase this sample's call chain shows, given the phase before."""
    chain = " ".join(frames)
    if "sys_newfstatat" in chain:
        return "stat"
    if "sys_unlink" in chain:
        return "remove"
    if "sys_openat" in chain or "__x64_sys_close" in chain:
        if last in ("stat", "read"):
            return "read"
        if last == "create" or any(f in chain for f in CREATING):
            return "create"
    return None


def windows_of(mine):
    """[phase, start, end, markers] of one process's phases, in time order.

    Runs of consecutive markers of one phase, from the first file created
    (MPI's start-up stats and opens files too)."""
    windows, last = [], None
    for _comm, _tid, time, frames in mine:
        phase = marker(frames, last)
        if phase is None or (last is None and phase != "create"):
            continue
        if phase != last:
            windows.append([phase, time, time, 0])
        windows[-1][2] = time
        windows[-1][3] += 1
        last = phase
    # A handful of markers is MPI's finalize (its shared memory files), not a phase.
    return [w for w in windows if w[3] >= MIN_MARKERS]


def main():
    hz = float(sys.argv[1])
    by_rank = {}
    for s in samples(sys.stdin):
        if s[0] == "mdtest":
            by_rank.setdefault(s[1], []).append(s)
    # Each rank's own windows: a rank that finished a phase early waits in
    # MPI's barrier, and that wait is not the phase's work.
    out = {p: [] for p in ("create", "stat", "read", "remove")}
    for mine in by_rank.values():
        seen = {p: 0 for p in out}
        for phase, start, end, _ in windows_of(mine):
            inside = [s for s in mine if start <= s[2] <= end]
            kernel = sum(1 for s in inside if s[3] and "[kernel.kallsyms]" in s[3][0])
            k = seen[phase]
            seen[phase] += 1
            if len(out[phase]) <= k:
                out[phase].append({"kernel_s": 0.0, "user_s": 0.0, "wall_s": 0.0})
            window = out[phase][k]
            window["kernel_s"] += kernel / hz
            window["user_s"] += (len(inside) - kernel) / hz
            window["wall_s"] = max(window["wall_s"], end - start)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
