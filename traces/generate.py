#!/usr/bin/env python3
"""Generates traces/fileserver.load, fsscale's built-in replay trace.

One pass is an office worker's session on a file server, in the dbench
loadfile format: a project folder is made and filled with documents,
spreadsheets and slides, then 400 activities are drawn with fixed weights:

  weight  activity                 operations
  30      open and read a document NTCreateX(open), QUERY_FILE_INFORMATION, ReadX..., Close
  18      browse a folder          FIND_FIRST, QUERY_PATH_INFORMATION x 3-6 (some absent: NOT_FOUND)
  14      save a document          NTCreateX(create) of a temp file, WriteX..., Flush, Close,
                                   Unlink of the old version, Rename temp -> document,
                                   NTCreateX(open), SET_FILE_INFORMATION, Close
  10      update a spreadsheet     NTCreateX(open), LockX, ReadX, WriteX, UnlockX, Close
   8      check for a lock file    QUERY_PATH_INFORMATION of ~$name (NOT_FOUND)
   6      check free space         QUERY_FS_INFORMATION
   6      append to a log          NTCreateX(open-if), QUERY_FILE_INFORMATION, WriteX at end, Close
   4      scratch folder           Mkdir, NTCreateX(create), WriteX, Close, Unlink, Rmdir
   4      new document             NTCreateX(create), WriteX..., Close

and the session ends by deleting the folder (Deltree), so passes repeat
exactly. Transfer sizes are those of SMB clients: 4 KiB to 64 KiB.
The output is a function of SEED alone (Python's Mersenne Twister
`random()` is stable across versions):

    python3 traces/generate.py > traces/fileserver.load
"""

import random

SEED = 20261122
ACTIVITIES = 400
OK = "NT_STATUS_OK"
NOT_FOUND = "NT_STATUS_OBJECT_NAME_NOT_FOUND"

rng = random.Random(SEED)
out = []


def pick(n):
    return int(rng.random() * n)


def chunk():
    return [4096, 8192, 16384, 32768, 61440, 65536][pick(6)]


def emit(*fields):
    out.append(" ".join(str(f) for f in fields))


def q(path):
    return '"\\' + path.replace("/", "\\") + '"'


next_handle = [1000]


def handle():
    next_handle[0] += 1
    return next_handle[0]


ROOT = "project"
FOLDERS = ["docs", "sheets", "slides", "tmp", "logs"]
files = {}  # path -> size


def write_file(path, size, disposition):
    h = handle()
    emit("NTCreateX", q(path), "0x0", disposition, h, OK)
    offset = 0
    while offset < size:
        n = min(chunk(), size - offset)
        emit("WriteX", h, offset, n, n, OK)
        offset += n
    return h


emit("Deltree", q(ROOT), OK)
emit("Mkdir", q(ROOT), OK)
for folder in FOLDERS:
    emit("Mkdir", q(f"{ROOT}/{folder}"), OK)
for i in range(12):
    for folder, ext in (("docs", "DOC"), ("sheets", "XLS"), ("slides", "PPT")):
        path = f"{ROOT}/{folder}/{folder.upper()[:4]}{i:02d}.{ext}"
        size = 8192 + pick(40) * 4096
        h = write_file(path, size, 2)
        emit("Close", h, OK)
        files[path] = size
emit("NTCreateX", q(f"{ROOT}/logs/ACCESS.LOG"), "0x0", 2, handle(), OK)
emit("Close", next_handle[0], OK)
files[f"{ROOT}/logs/ACCESS.LOG"] = 0

WEIGHTS = [("read", 30), ("browse", 18), ("save", 14), ("sheet", 10), ("lockfile", 8),
           ("fsinfo", 6), ("log", 6), ("scratch", 4), ("new", 4)]
TOTAL = sum(w for _, w in WEIGHTS)


def activity():
    r = pick(TOTAL)
    for name, w in WEIGHTS:
        if r < w:
            return name
        r -= w


def some(folder):
    names = sorted(p for p in files if p.startswith(f"{ROOT}/{folder}/"))
    return names[pick(len(names))]


scratch_id = 0
new_id = 0
for _ in range(ACTIVITIES):
    kind = activity()
    if kind == "read":
        path = some(["docs", "sheets", "slides"][pick(3)])
        h = handle()
        emit("NTCreateX", q(path), "0x0", 1, h, OK)
        emit("QUERY_FILE_INFORMATION", h, 1004, OK)
        offset = 0
        while offset < files[path]:
            n = min(chunk(), files[path] - offset)
            emit("ReadX", h, offset, n, n, OK)
            offset += n
        emit("Close", h, OK)
    elif kind == "browse":
        folder = FOLDERS[pick(3)]
        emit("FIND_FIRST", q(f"{ROOT}/{folder}/*"), 260, 1366, 0, OK)
        for _ in range(3 + pick(4)):
            if pick(5) == 0:
                emit("QUERY_PATH_INFORMATION", q(f"{ROOT}/{folder}/desktop.ini"), 1004, NOT_FOUND)
            else:
                emit("QUERY_PATH_INFORMATION", q(some(folder)), 1004, OK)
    elif kind == "save":
        path = some("docs")
        tmp = f"{ROOT}/tmp/~WRL{pick(10000):04d}.TMP"
        size = max(4096, files[path] + (pick(5) - 2) * 4096)
        h = write_file(tmp, size, 2)
        emit("Flush", h, OK)
        emit("Close", h, OK)
        emit("Unlink", q(path), "0x6", OK)
        emit("Rename", q(tmp), q(path), OK)
        files[path] = size
        h = handle()
        emit("NTCreateX", q(path), "0x0", 1, h, OK)
        emit("SET_FILE_INFORMATION", h, 1004, OK)
        emit("Close", h, OK)
    elif kind == "sheet":
        path = some("sheets")
        h = handle()
        offset = pick(files[path] // 4096) * 4096
        emit("NTCreateX", q(path), "0x0", 1, h, OK)
        emit("LockX", h, offset, 4096, OK)
        emit("ReadX", h, offset, 4096, 4096, OK)
        emit("WriteX", h, offset, 4096, 4096, OK)
        emit("UnlockX", h, offset, 4096, OK)
        emit("Close", h, OK)
    elif kind == "lockfile":
        path = some("docs")
        folder, name = path.rsplit("/", 1)
        emit("QUERY_PATH_INFORMATION", q(f"{folder}/~${name}"), 1004, NOT_FOUND)
    elif kind == "fsinfo":
        emit("QUERY_FS_INFORMATION", 259, OK)
    elif kind == "log":
        path = f"{ROOT}/logs/ACCESS.LOG"
        h = handle()
        n = 512 + pick(8) * 256
        emit("NTCreateX", q(path), "0x0", 3, h, OK)
        emit("QUERY_FILE_INFORMATION", h, 1005, OK)
        emit("WriteX", h, files[path], n, n, OK)
        emit("Close", h, OK)
        files[path] += n
    elif kind == "scratch":
        scratch_id += 1
        d = f"{ROOT}/tmp/unpack{scratch_id}"
        emit("Mkdir", q(d), OK)
        h = write_file(f"{d}/README.TXT", 4096 + pick(4) * 4096, 2)
        emit("Close", h, OK)
        emit("Unlink", q(f"{d}/README.TXT"), "0x6", OK)
        emit("Rmdir", q(d), OK)
    elif kind == "new":
        new_id += 1
        path = f"{ROOT}/docs/NEW{new_id:03d}.DOC"
        size = 4096 * (1 + pick(6))
        h = write_file(path, size, 2)
        emit("Close", h, OK)
        files[path] = size
emit("Deltree", q(ROOT), OK)

print("# fsscale built-in replay trace 'fileserver': an office worker's session on a file server.")
print("# Generated by traces/generate.py (seed %d); regenerate, do not edit." % SEED)
print("# dbench loadfile format: Operation arguments... status")
print("\n".join(out))
