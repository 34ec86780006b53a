#!/usr/bin/env python3
"""The layering rules of docs/design.md section 6, checked over the source (run by .ci/run).

Five rules, each a function below; every broken one is reported, then the exit status
is 1. Comments are not code: a rule reads only what `code()` leaves of a file.

1. `system_only_outside_seam`: no Linux-only or macOS-only call, file or crate is named
   outside the platform seams (`src/watch/platform/`, `src/worktree/platform.rs`), and
   Cargo.toml declares such crates and features only under that system's target
   section. A build for another system must not depend on anything this rule names.
4. `target_crates_used_elsewhere`: the other direction of rule 1: a crate Cargo.toml
   declares only for Linux, or only for macOS, is used only inside the platform seams,
   so that a build for another system, which does not get the crate, still compiles.
5. `unsafe_outside_fsevents`: in the library, `unsafe` appears only in the macOS event
   source (`src/watch/platform/macos.rs`: FSEvents has only a C interface); the library
   denies it everywhere else. (The binary sets signal dispositions through libc.)
2. `lower_layers_import_upper`: nothing below the operations (storage, git, worktree,
   watch, model, format, settings, the ground floor) imports `ops`, `remote` or `agents`.
3. `redb_outside_storage`: nothing outside `src/storage/` names redb; inside it, no item
   another module can reach (`pub`, `pub(crate)`) names redb or a name imported from
   it, so no alias (`pub type ReadChunks = ...redb...`) carries it out either. Inside the
   storage layer, engine types travel through `pub(super)` / `pub(in crate::storage)`.

Usage: scripts/layers.py [repository root]; prints nothing when every rule holds.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
SRC = ROOT / "src"

# The only places that may name what exists on Linux alone.
PLATFORM_SEAMS = ("src/watch/platform/", "src/worktree/platform.rs")

# Calls, files and crates that exist on Linux (and Android) only.
LINUX_ONLY = re.compile(
    r"""\binotify\b|\bfanotify\b|\bepoll_?\w*|\bsyncfs\b|\bstatx\b|/proc/|\bO_PATH\b|\bOFlags::PATH\b
       |\bO_TMPFILE\b|\bmemfd_?\w*|\brenameat2\b|\brenameat_with\b|\bcopy_file_range\b
       |\bfallocate\b|\bfadvise\b|\bsendfile\b|\bprctl\b|\bopenat2\b|\blinux_raw\b
       |\bFICLONE\b|\bioctl_ficlone\b|\bsignalfd\b|\btimerfd\w*|\beventfd\b""",
    re.VERBOSE,
)
# Crates that build or link on Linux only; Cargo.toml may name them only under a
# `[target.'cfg(target_os = "linux")'...]` section.
LINUX_CRATES = ("inotify", "inotify-sys", "fanotify", "procfs", "linux-raw-sys")

# Calls and types that exist on macOS only (FSEvents, Core Foundation, libdispatch, the
# BSD mount table as macOS has it).
MACOS_ONLY = re.compile(
    r"\bk?FSEvent\w*|\bCF(?:String|Array|RunLoop|Retained)\b|\bDispatchQueue\b|\bgetfsstat\b"
    r"|\bgetmntinfo\b"
)
# Crates that build or link on macOS only (bindings to Apple's frameworks); Cargo.toml
# may name them only under a `[target.'cfg(target_os = "macos")'...]` section.
MACOS_CRATES = (
    "objc2",
    "objc2-core-foundation",
    "objc2-core-services",
    "dispatch2",
    "block2",
    "fsevent-sys",
    "core-foundation",
    "core-foundation-sys",
)
# Each system's only names and crates, and how its target section says so.
SYSTEMS = (
    ("Linux", LINUX_ONLY, LINUX_CRATES, 'target_os = "linux"'),
    ("macOS", MACOS_ONLY, MACOS_CRATES, 'target_os = "macos"'),
)

# The one file that may use `unsafe` (rule 5).
UNSAFE_ALLOWED = "src/watch/platform/macos.rs"

# The layers above everything else (design.md section 6): the operations and their
# peers, and the binary. Every other module of `src/` is below them.
UPPER = ("ops", "remote", "agents", "diff", "bin")
UPPER_IMPORTED = ("ops", "remote", "agents")

STORAGE = "src/storage/"


def rel(path):
    return path.relative_to(ROOT).as_posix()


def rust_files():
    return sorted(SRC.rglob("*.rs"))


def code(text, strings=True):
    """The text without comments (line, doc and block comments), line numbers kept;
    string literals kept, or emptied (`strings=False`)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text[i] == '"' or text.startswith('r"', i) or text.startswith('r#"', i):
            # Skipped over whole, so a `//` inside is not taken for a comment. Kept for
            # rule 1: a path such as "/proc/self/mountinfo" is what it looks for.
            m = re.compile(r'r(#*)"').match(text, i)
            if m:
                end = text.find('"' + m.group(1), m.end())
                j = n if end < 0 else end + 1 + len(m.group(1))
            else:
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                j += 1
            out.append(text[i:j] if strings else '""' + "\n" * text.count("\n", i, j))
            i = j
        elif text[i] == "'" and re.compile(r"'(\\.|[^\\'])'").match(text, i):
            # A char literal ('"' would otherwise open a string).
            m = re.compile(r"'(\\.|[^\\'])'").match(text, i)
            out.append(text[i : m.end()])
            i = m.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def lines_matching(path, pattern, strings=True):
    source = code(path.read_text(), strings)
    for number, line in enumerate(source.split("\n"), 1):
        if pattern.search(line):
            yield number, line.strip()


def system_only_outside_seam():
    """Rule 1: Linux- and macOS-only names stay in the platform seams; such crates and
    features are declared for their system only."""
    found = []
    for path in rust_files():
        if rel(path).startswith(PLATFORM_SEAMS):
            continue
        for system, names, _, _ in SYSTEMS:
            for number, line in lines_matching(path, names):
                found.append(f"{rel(path)}:{number}: {system}: {line}")
    section = None
    for number, line in enumerate((ROOT / "Cargo.toml").read_text().split("\n"), 1):
        stripped = line.split("#", 1)[0].strip()
        if stripped.startswith("["):
            section = stripped
            continue
        if not stripped:
            continue
        name = stripped.split("=", 1)[0].strip().strip('"')
        for system, _, crates, target in SYSTEMS:
            if section is not None and target in section:
                continue
            feature = re.search(rf'features\s*=.*"{system.lower()}', stripped)
            if name in crates or feature:
                found.append(f"Cargo.toml:{number} ({section}): {system}: {stripped}")
    if found:
        return (
            "Linux-only or macOS-only calls or crates named outside the platform seams "
            f"({', '.join(PLATFORM_SEAMS)}); put them behind the seam with a fallback "
            "for other systems, and such crates under that system's "
            "[target.'cfg(target_os = \"...\")'.dependencies]:",
            found,
        )
    return None


def target_only_crates(target):
    """The crates Cargo.toml declares under a section for `target` (`target_os = "..."`),
    as Rust names them."""
    crates, section = set(), None
    for line in (ROOT / "Cargo.toml").read_text().split("\n"):
        stripped = line.split("#", 1)[0].strip()
        if stripped.startswith("["):
            section = stripped
            continue
        if section and target in section and "dependencies" in section:
            if "=" in stripped:
                crates.add(stripped.split("=", 1)[0].strip().strip('"').replace("-", "_"))
    return crates


def target_crates_used_elsewhere():
    """Rule 4: a crate only Linux builds, or only macOS builds, get is named only inside
    the platform seams."""
    crates = set().union(*(target_only_crates(target) for _, _, _, target in SYSTEMS))
    if not crates:
        return None
    names = "|".join(sorted(map(re.escape, crates)))
    pattern = re.compile(
        rf"(?<![\w:.])(?:{names})\s*::|\b(?:use|extern\s+crate)\s+(?:{names})\b"
    )
    found = []
    for path in rust_files():
        if rel(path).startswith(PLATFORM_SEAMS):
            continue
        for number, line in lines_matching(path, pattern, strings=False):
            found.append(f"{rel(path)}:{number}: {line}")
    if found:
        return (
            "a crate Cargo.toml declares for Linux or macOS only is used outside the "
            f"platform seams ({', '.join(PLATFORM_SEAMS)}); a build for another system "
            "does not get it: declare it for every system, or use it behind the seam:",
            found,
        )
    return None


def unsafe_outside_fsevents():
    """Rule 5: in the library, `unsafe` only in the macOS event source."""
    word = re.compile(r"\bunsafe\b")
    found = []
    for path in rust_files():
        if rel(path) == UNSAFE_ALLOWED or rel(path).startswith("src/bin/"):
            continue
        for number, line in lines_matching(path, word, strings=False):
            found.append(f"{rel(path)}:{number}: {line}")
    if found:
        return (
            f"`unsafe` in the library outside {UNSAFE_ALLOWED} (docs/design.md section 6: it "
            "has no unsafe but FSEvents' C interface; go through rustix or std):",
            found,
        )
    return None


def lower_layers_import_upper():
    """Rule 2: a module below the operations imports none of them."""
    names = "|".join(UPPER_IMPORTED)
    # `crate::ops`, `crate::{ops, ..}` (a use group, up to its `;`), `super::ops`.
    pattern = re.compile(
        rf"\bcrate\s*::\s*(?:({names})\b|\{{[^;]*?(?<![\w:])({names})\b)"
        rf"|\bsuper\s*::\s*(?:super\s*::\s*)*({names})\b"
    )
    found = []
    for path in rust_files():
        top = path.relative_to(SRC).parts[0].removesuffix(".rs")
        if top in UPPER or top == "lib":
            continue
        source = code(path.read_text())
        for m in pattern.finditer(source):
            number = source.count("\n", 0, m.start()) + 1
            name = next(g for g in m.groups() if g)
            found.append(f"{rel(path)}:{number}: {m.group(0).split(chr(10))[0]} … {name}")
    if found:
        return (
            f"a module below the operations imports {', '.join(UPPER_IMPORTED)} "
            "(design.md section 6: a module imports only its own layer or those below; "
            "move the shared piece down, or the caller up):",
            found,
        )
    return None


def redb_names(source):
    """The names a storage file gives to things of redb: `redb` itself, and what it
    imports from it (`use redb::{A, B as C}` gives A and C; `use redb as E` gives E)."""
    names = {"redb"}
    for m in re.finditer(r"\buse\s+redb\b([^;]*);", source):
        rest = m.group(1)
        if rest.strip().startswith("as"):
            names.add(rest.split()[-1])
            continue
        for item in re.split(r"[{},]", rest):
            item = item.strip().removeprefix("::").strip()
            if not item or item == "self":
                continue
            names.add(item.split(" as ")[-1].split("::")[-1].strip())
    names.discard("*")
    return names


# A `pub` or `pub(crate)` item: what it shows reaches the whole crate. Fields included;
# a struct's or enum's header ends at its body, so private fields are its own business.
REACHABLE_ITEM = re.compile(
    r"\bpub(?:\s*\(\s*crate\s*\))?\s+"
    r"(?:(?:const|static|type|use|trait|impl)\b[^;{]*|(?:unsafe\s+)?fn\b[^;{]*"
    r"|(?:struct|enum|union)\b[^;{(]*|\w+\s*:[^,}]*)"
)


def redb_outside_storage():
    """Rule 3: redb is named in `src/storage/` only, and no reachable item there shows it."""
    found = []
    word = re.compile(r"\bredb\b")
    for path in rust_files():
        source = code(path.read_text())
        if not rel(path).startswith(STORAGE):
            # In a string it is a name (the store's file), not the engine.
            for number, line in lines_matching(path, word, strings=False):
                found.append(f"{rel(path)}:{number}: {line}")
            continue
        names = redb_names(source)
        named = re.compile(r"(?<![\w:])(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
        for m in REACHABLE_ITEM.finditer(source):
            if named.search(m.group(0)):
                number = source.count("\n", 0, m.start()) + 1
                found.append(f"{rel(path)}:{number}: {' '.join(m.group(0).split())}")
    if found:
        return (
            "redb reaches outside src/storage/ (design.md section 6): only storage names "
            "it, and no pub or pub(crate) item there shows a redb type, alias or not "
            "(wrap it in a storage type with private fields; inside storage use "
            "pub(super) or pub(in crate::storage)):",
            found,
        )
    return None


def main():
    failed = False
    for rule in (
        system_only_outside_seam,
        target_crates_used_elsewhere,
        lower_layers_import_upper,
        redb_outside_storage,
        unsafe_outside_fsevents,
    ):
        broken = rule()
        if broken:
            failed = True
            why, where = broken
            print(f"layers: {rule.__name__}: {why}", file=sys.stderr)
            for line in where:
                print(f"  {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
