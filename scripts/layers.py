#!/usr/bin/env python3
"""The layering rules of docs/design.md section 6, checked over the source (run by .ci/run).

Seven rules, each a function below; every broken one is reported, then the exit status
is 1. Comments are not code: a rule reads only what `code()` leaves of a file.

1. `system_only_outside_seam`: no Linux-only or macOS-only call, file or crate is named
   outside the platform seams (`src/watch/platform/`, `src/worktree/platform.rs`), and
   Cargo.toml declares such crates and features only under that system's target
   section. A build for another system must not depend on anything this rule names.
2. `lower_layers_import_upper`: nothing below the operations (storage, git, worktree,
   watch, model, format, settings, the ground floor) imports `doctor`, `ops`, `remote`
   or `agents`.
3. `redb_outside_storage`: nothing outside `src/storage/` names redb; inside it, no item
   another module can reach (`pub`, `pub(crate)`) names redb or a name imported from
   it, so no alias (`pub type ReadChunks = ...redb...`) carries it out either. Inside the
   storage layer, engine types travel through `pub(super)` / `pub(in crate::storage)`.
4. `target_crates_used_elsewhere`: the other direction of rule 1: a crate Cargo.toml
   declares only for Linux, or only for macOS, is used only inside the platform seams,
   so that a build for another system, which does not get the crate, still compiles.
5. `unsafe_outside_fsevents`: in the library, `unsafe` appears only in the macOS event
   source (`src/watch/platform/macos.rs`: FSEvents has only a C interface); the library
   denies it everywhere else. (The binary sets signal dispositions through libc.)
6. `file_import_cycles`: no files of `src/` import each other, straight or round a loop.
   File A has an arrow to file B when A names an item B defines: in a `use` (`crate::`,
   `super::`, `self::`, a name in scope, `git_checkpoint::` in the binary) or in a path
   in its code (`super::store::new_generation(..)`), each name followed through imports
   and re-exports to the file that defines it. What counts, as decided here:
   - `mod x;` is no arrow, and a re-export (`pub use x::Y;`) is one only where the
     file's own code names `Y`: a module's face is not its dependency; whoever names `Y`
     through the face gets an arrow to the file that defines `Y`.
   - An arrow up the module tree, to the file of a module the file is inside (a child's
     `super::Plan` from its `mod.rs`, `tree/splice.rs` taking from `tree.rs`), is not
     counted: a parent module holds its children's shared vocabulary, which Rust shows
     them by design. Arrows down (a `mod.rs` calling its children), between siblings and
     across modules all count, so two children that use each other are caught.
   - Test modules (`#[cfg(test)]`) are left out: a test may compare two rooms' answers.
   - Read from tokens: a name a macro defines is taken to be its module's file's, and
     a bare name from a glob import counts where the file names it.
7. `files_over_limit`: no file of `src/` is over 700 lines; past that, split it by
   concern.

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
    r"""\binotify\b|\bfanotify\b|\bepoll_?\w*|\bsyncfs\b|\bstatx\b|/proc/|\bO_PATH\b
       |\bO_TMPFILE\b|\bmemfd_?\w*|\brenameat2\b|\brenameat_with\b|\bcopy_file_range\b
       |\bfallocate\b|\bfadvise\b|\bsendfile\b|\bprctl\b|\bopenat2\b|\blinux_raw\b
       |\bFICLONE\b|\bioctl_ficlone\b|\bsignalfd\b|\btimerfd\w*|\beventfd\b
       |\bOFlags::PATH\b""",
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
UPPER = ("doctor", "ops", "remote", "agents", "diff", "bin")
UPPER_IMPORTED = ("doctor", "ops", "remote", "agents")

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


# The most lines a file of src/ may have: past it, split the file by concern.
MAX_LINES = 700

# Tokens of Rust code: char literals and lifetimes apart, so that `'{'` opens nothing.
TOKEN = re.compile(
    r"""(?P<char>b?'(?:\\.|\\u\{[0-9a-fA-F]*\}|[^\\'])')
       |(?P<lifetime>'[A-Za-z_]\w*)
       |(?P<ident>(?:r\#)?[A-Za-z_]\w*)
       |(?P<number>\d[\w.]*)
       |(?P<punct>::|[^\s\w])""",
    re.VERBOSE,
)
# What defines a name in a module (besides `macro_rules!`).
ITEM_KEYWORDS = {"fn", "struct", "enum", "trait", "type", "const", "static", "union"}
# The library's name, as the binary's files write it.
LIB_CRATE = "git_checkpoint"


def tokens(text):
    """The tokens of a file's code (no comments, strings emptied), as (kind, text)."""
    out = []
    for m in TOKEN.finditer(code(text, strings=False)):
        kind = m.lastgroup
        out.append((kind, m.group().removeprefix("r#") if kind == "ident" else m.group()))
    return out


class Module:
    """One module: the file it is written in, and the names it defines and imports."""

    def __init__(self, file, test):
        self.file = file
        # Under `#[cfg(test)]`, itself or a module it is inside.
        self.test = test
        # Child module name -> its path.
        self.children = {}
        # Names of the items it defines.
        self.items = set()
        # Name a `use` binds -> the path it names.
        self.uses = {}
        # Paths of its glob imports (`use x::*`).
        self.globs = []


class Reference:
    """A path a file names: in a `use` (binding `bound`, `*` for a glob, `public` for a
    re-export) or in its code; written in the module `module`."""

    def __init__(self, file, module, segments, bound=None, public=False):
        self.file = file
        self.module = module
        self.segments = segments
        self.bound = bound
        self.public = public


class SourceTree:
    """The modules of src/'s crates (the library and each binary) and every path their
    files name, read from tokens: no macro is expanded, no type inferred. A module is
    named by its path from its crate's root: ("lib", "ops", "save")."""

    def __init__(self):
        self.modules = {}
        self.references = []
        # File -> the identifiers its code names outside `use` and `mod` declarations.
        self.named = {}
        roots = [(("lib",), SRC / "lib.rs")]
        roots += [((f"bin {p.parent.name}",), p) for p in sorted(SRC.glob("bin/*/main.rs"))]
        roots += [((f"bin {p.stem}",), p) for p in sorted(SRC.glob("bin/*.rs"))]
        for path, file in roots:
            if file.exists():
                self.read_file(path, file, file.parent, False)

    def read_file(self, path, file, children_dir, test):
        """Reads the module `path` written in `file`, and the files of its children
        (`mod x;` is `children_dir/x.rs` or `children_dir/x/mod.rs`)."""
        self.modules[path] = Module(file, test)
        source = code(file.read_text(), strings=False)
        outside = re.sub(r"\buse\b[^;]*;|\bmod\s+\w+\s*;", ";", source)
        self.named[file] = set(re.findall(r"[A-Za-z_]\w*", outside))
        toks = tokens(file.read_text())
        # One entry per open brace: (module path, its children's directory) where the
        # brace opens an inline module's body, None where it opens anything else.
        scopes = [(path, children_dir)]
        under_cfg_test = False
        i, n = 0, len(toks)
        while i < n:
            kind, text = toks[i]
            here, here_dir = next(s for s in reversed(scopes) if s)
            module = self.modules[here]
            at_module_level = scopes[-1] is not None
            following = toks[i + 1] if i + 1 < n else ("", "")
            if text == "#" and following[1] in ("[", "!"):
                j = i + 1 if following[1] == "[" else i + 2
                start, depth = j, 0
                while j < n:
                    depth += {"[": 1, "]": -1}.get(toks[j][1], 0)
                    if depth == 0:
                        break
                    j += 1
                attribute = [t for _, t in toks[start + 1 : j]]
                under_cfg_test |= attribute == ["cfg", "(", "test", ")"]
                i = j + 1
                continue
            if text in ("{", "}", ";"):
                if text == "{":
                    scopes.append(None)
                elif text == "}":
                    scopes.pop()
                under_cfg_test = False
            elif kind == "ident" and text == "use":
                i = self.read_use(toks, i, here, file)
                under_cfg_test = False
                continue
            elif text == "mod" and following[0] == "ident" and i + 2 < n:
                name, child = following[1], here + (following[1],)
                module.children[name] = child
                test = module.test or under_cfg_test
                under_cfg_test = False
                if toks[i + 2][1] == "{":
                    self.modules[child] = Module(file, test)
                    scopes.append((child, here_dir / name))
                else:
                    for candidate in (here_dir / f"{name}.rs", here_dir / name / "mod.rs"):
                        if candidate.exists():
                            self.read_file(child, candidate, here_dir / name, test)
                            break
                i += 3
                continue
            elif at_module_level and text in ITEM_KEYWORDS and following[0] == "ident":
                module.items.add(following[1])
            elif text == "macro_rules" and following[1] == "!" and i + 2 < n:
                module.items.add(toks[i + 2][1])
            elif kind == "ident" and not (i > 0 and toks[i - 1][1] in ("::", ".")):
                # A path in code: `super::store::new_generation`, `walk::walk_paths`.
                segments = [text]
                while i + 2 < n and toks[i + 1][1] == "::" and toks[i + 2][0] == "ident":
                    segments.append(toks[i + 2][1])
                    i += 2
                if len(segments) > 1 and segments[0] != "Self":
                    self.references.append(Reference(file, here, segments))
            i += 1

    def read_use(self, toks, i, here, file):
        """Reads the `use` declaration at `toks[i]` (a tree of paths: groups, `self`,
        `as`, globs); returns the index after its `;`."""
        before = [t for _, t in toks[max(0, i - 8) : i]]
        public = before[-1:] == ["pub"] or (before[-1:] == [")"] and "pub" in before)
        end = i
        while end < len(toks) and toks[end][1] != ";":
            end += 1
        body = [t for _, t in toks[i + 1 : end]]
        module = self.modules[here]

        def bind(segments, bound):
            if bound not in ("_", "*"):
                module.uses[bound] = segments
            if bound == "*":
                module.globs.append(segments)
            self.references.append(Reference(file, here, segments, bound, public))

        def tree(pos, prefix):
            segments = list(prefix)
            while pos < len(body):
                t = body[pos]
                if t == "::":
                    pos += 1
                elif t == "{":
                    pos += 1
                    while pos < len(body) and body[pos] != "}":
                        pos = tree(pos, segments)
                        pos += body[pos : pos + 1] == [","]
                    return pos + 1
                elif t == "*":
                    bind(segments, "*")
                    return pos + 1
                elif t == "as":
                    bind(segments, body[pos + 1])
                    return pos + 2
                elif t in (",", "}"):
                    return pos
                else:
                    segments.append(t)
                    pos += 1
                    if pos >= len(body) or body[pos] in (",", "}"):
                        if t == "self":
                            segments.pop()
                        bind(segments, segments[-1])
                        return pos
            return pos

        tree(0, [])
        return end + 1

    def member(self, path, name, seen=frozenset()):
        """What `name` is in the module `path`: ("mod", module path), ("item", the
        file defining it, its name), or None (not ours, or not found)."""
        module = self.modules.get(path)
        if module is None or (path, name) in seen:
            return None
        seen = seen | {(path, name)}
        if name in module.children:
            return ("mod", module.children[name])
        if name in module.items:
            return ("item", module.file, name)
        if name in module.uses:
            return self.resolve(module.uses[name], path, seen)
        for segments in module.globs:
            target = self.resolve(segments, path, seen)
            found = target and target[0] == "mod" and self.member(target[1], name, seen)
            if found:
                return found
        return None

    def resolve(self, segments, path, seen=frozenset()):
        """What `segments`, written in the module `path`, names (as `member` answers),
        each name followed through imports and re-exports to where it is defined. Past
        an item (an enum's variant, a type's function) the item answers."""
        first, rest = segments[0], segments[1:]
        if first == "crate":
            at = ("mod", path[:1])
        elif first in ("self", "super"):
            up = 0 if first == "self" else 1
            while rest[:1] == ["super"]:
                up, rest = up + 1, rest[1:]
            at = ("mod", path[: len(path) - up]) if up < len(path) else None
        elif first == LIB_CRATE and path[0] != "lib":
            at = ("mod", ("lib",))
        else:
            at = self.member(path, first, seen)
        for name in rest:
            if at is None or at[0] == "item":
                break
            # A name defined in a way not read here (by a macro): its module's file.
            at = self.member(at[1], name, seen) or ("item", self.modules[at[1]].file, name)
        return at

    def arrows(self):
        """file -> file -> the names the first takes from the second (rule 6)."""
        found = {}
        for ref in self.references:
            if self.modules[ref.module].test:
                continue
            if ref.bound == "*":
                target = self.resolve(ref.segments, ref.module)
                if ref.public or not target or target[0] != "mod":
                    continue
                glob = self.modules[target[1]]
                names = self.named[ref.file] & (glob.items | set(glob.uses))
                targets = [self.member(target[1], name) for name in sorted(names)]
            elif ref.public and ref.bound not in self.named[ref.file]:
                continue
            else:
                targets = [self.resolve(ref.segments, ref.module)]
            above = {self.modules[ref.module[:k]].file for k in range(1, len(ref.module) + 1)}
            for target in targets:
                if target and target[0] == "item" and target[1] not in above:
                    found.setdefault(ref.file, {}).setdefault(target[1], set()).add(target[2])
        return found


def cycles(arrows):
    """The groups of two files or more that reach each other (strongly connected
    components, Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in arrows.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(arrows):
        if v not in index:
            visit(v)
    return sorted(groups)


def file_import_cycles():
    """Rule 6: no files of src/ import each other, straight or round a loop."""
    arrows = SourceTree().arrows()
    found = []
    for group in cycles(arrows):
        found.append(" <-> ".join(rel(f) for f in group))
        for a in group:
            for b in group:
                if b in arrows.get(a, {}):
                    names = ", ".join(sorted(arrows[a][b]))
                    found.append(f"    {rel(a)} -> {rel(b)}: {names}")
    if found:
        return (
            "files import each other (design.md section 6: every arrow runs one way; "
            "move what both take below both, or the caller up):",
            found,
        )
    return None


def files_over_limit():
    """Rule 7: no file of src/ is over MAX_LINES lines."""
    found = []
    for path in rust_files():
        lines = path.read_text().count("\n")
        if lines > MAX_LINES:
            found.append(f"{rel(path)}: {lines} lines")
    if found:
        return (f"files over {MAX_LINES} lines (split each by concern):", found)
    return None


def main():
    failed = False
    for rule in (
        system_only_outside_seam,
        target_crates_used_elsewhere,
        lower_layers_import_upper,
        redb_outside_storage,
        unsafe_outside_fsevents,
        file_import_cycles,
        files_over_limit,
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
