"""Writes a synthetic source tree of N files under a directory, the same for a given N.

Usage: python3 benches/synthetic_tree.py <dir> <files>

Files are 5 to 400 lines of identifier soup (about 6 KB on average), spread over
97 x 13 x 5 directories, so that a tree of any size has the shape of a source tree:
many small files, a few thousand directories. For scaling curves, not headline figures.
"""
import os
import random
import sys

root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
words = [f"ident_{i}" for i in range(500)]
for i in range(n):
    d = os.path.join(root, f"d{i % 97:02}", f"e{i % 13:02}", f"f{i % 5}")
    os.makedirs(d, exist_ok=True)
    lines = rng.randint(5, 400)
    with open(os.path.join(d, f"file{i}.rs"), "w") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) + ";\n")
