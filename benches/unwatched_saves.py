#!/usr/bin/env python3
"""Saves without a watcher against `git status`, in one run: a save with nothing changed
and a save after 20 changes (10 edits, 5 adds, 5 deletes, as benches/compare.sh makes
them), for each given build, alternated round by round with `git status` (untracked
cache off) of a shadow repository where every file is tracked. Prints the medians of
wall time and of CPU time (user + system, from wait4), and each over `git status`.

Usage: benches/unwatched_saves.py TREE RUNS BIN [BIN...]
  TREE: a git worktree whose files (tracked and untracked, not ignored) are copied.
"""
import os, subprocess, sys, time, shutil, statistics, json
src, runs, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
import tempfile
s = tempfile.mkdtemp(prefix="unwatched_saves.")
env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=s)
def sh(c, **k): return subprocess.run(c, shell=True, check=True, env=env, stdout=subprocess.PIPE, **k).stdout
sh(f"git config --global user.email b@e.invalid; git config --global user.name b; git config --global gc.auto 0")
work = f"{s}/w0"; os.makedirs(work)
sh(f"cd {src} && git ls-files -z -c -o --exclude-standard | xargs -0 cp -a --parents -t {work} 2>/dev/null || true")
sh(f"git -C {work} init -q -b main")
victims = sh(f"git -C {work} ls-files -o --exclude-standard").decode().split("\n")
victims = [v for i, v in enumerate(victims, 1) if v and i % 7 == 3][:15]
ws = []
for j, b in enumerate(bins, 1):
    w = f"{s}/w{j}"; sh(f"cp -a {work} {w}"); sh(f"{b} -C {w} -q save -m base")
    base = json.loads(sh(f"{b} -C {w} log --json -n 1"))[0]["id"]
    ws.append((b, w, base))
time.sleep(2.2)
for b, w, base in ws:
    sh(f"{b} -C {w} -q save --allow-empty -m settle")
shadow = f"git --git-dir={s}/shadow.git --work-tree={work}"
sh(f"git init -q --bare {s}/shadow.git; {shadow} config core.bare false; {shadow} add -A; {shadow} commit -qm base")
def mutate(w):
    stamp = time.time_ns()
    for f in victims[:10]:
        with open(f"{w}/{f}", "a") as fh: fh.write(f"edit {stamp}\n")
    for i in range(1, 6):
        with open(f"{w}/added_{i}.txt", "w") as fh: fh.write(f"added {stamp} {i}\n")
    for f in victims[10:]:
        try: os.remove(f"{w}/{f}")
        except FileNotFoundError: pass
import shlex
cpu = {}
def timed(c):
    args = shlex.split(c.replace(" >/dev/null", ""))
    t = time.perf_counter()
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    assert status == 0, c
    cpu.setdefault(c.split()[0] + (" status" if "status" in c else ""), []).append((ru.ru_utime + ru.ru_stime) * 1000)
    timed.last_cpu = (ru.ru_utime + ru.ru_stime) * 1000
    return wall
un = {b: [] for b in bins}; ed = {b: [] for b in bins}; gs = []
unc = {b: [] for b in bins}; edc = {b: [] for b in bins}; gsc = []
gst = f"{shadow} -c core.untrackedCache=false --no-optional-locks status --porcelain >/dev/null"
for r in range(runs + 1):
    for b, w, base in ws:
        t = timed(f"{b} -C {w} -q save")
        if r: un[b].append(t); unc[b].append(timed.last_cpu)
    t = timed(gst)
    if r: gs.append(t); gsc.append(timed.last_cpu)
    for b, w, base in ws:
        sh(f"{b} -C {w} -q restore {base} --no-save"); mutate(w)
        t = timed(f"{b} -C {w} -q save")
        if r: ed[b].append(t); edc[b].append(timed.last_cpu)
        sh(f"{b} -C {w} -q save")
m = statistics.median
g, gc_ = m(gs), m(gsc)
print(f"git status wall {g:.1f} ms, cpu {gc_:.1f} ms")
for b in bins:
    u, e, uc, ec = m(un[b]), m(ed[b]), m(unc[b]), m(edc[b])
    print(f"{b}: unchanged wall {u:.1f} ({u/g:.2f}x) cpu {uc:.1f} ({uc/gc_:.2f}x) | edits wall {e:.1f} ({e/g:.2f}x) cpu {ec:.1f} ({ec/gc_:.2f}x)")
shutil.rmtree(s)
