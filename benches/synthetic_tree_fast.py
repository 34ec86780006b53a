"""Writes a synthetic tree of N files under a directory, fast, the same for a given N.

Usage: python3 benches/synthetic_tree_fast.py <dir> <files> [--small]

The shape of benches/synthetic_tree.py (97 x 13 x 5 directories, file{i}.rs, about
10.8 KB a file on average, between 0.3 and 21 KB) but base64 lines of seeded random
bytes instead of identifier soup: every file is distinct (as many chunks as the slow
generator's trees), and a million files take minutes instead of hours, which is what the
1M-file row of benches/scaling.sh (GENERATOR=benches/synthetic_tree_fast.py) needs. The
content compresses less (about 3:4), so stores are larger than the slow tree's; counts
of files, directories and chunks, and so the memory a save holds per file, are alike.

With --small every file is 1 to 4 lines (under 300 bytes; one chunk each): the same
files and directories in about a tenth of the disk (a file still takes a block), for
measuring what a save holds per file (benches/peak_memory.sh) without 18 GB at 1M files.
"""
import base64
import os
import random
import sys

root, n = sys.argv[1], int(sys.argv[2])
small = "--small" in sys.argv[3:]
rng = random.Random(42)
made = set()
for i in range(n):
    d = os.path.join(root, f"d{i % 97:02}", f"e{i % 13:02}", f"f{i % 5}")
    if d not in made:
        os.makedirs(d, exist_ok=True)
        made.add(d)
    lines = rng.randint(1, 4) if small else rng.randint(5, 400)
    # base64 writes 76 characters a line for 57 bytes: 52-byte lines on average, as the
    # identifier soup's.
    body = base64.encodebytes(rng.randbytes(lines * 39))
    with open(os.path.join(d, f"file{i}.rs"), "wb") as f:
        f.write(body)
