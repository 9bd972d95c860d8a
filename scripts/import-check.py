#!/usr/bin/env python3
"""The targets' arrows, checked at three levels:

1. docs/architecture.md's "Targets" table is the rule: which target may depend on which.
2. Package.swift (read through `swift package dump-package`) declares the dependencies: each
   one must be an arrow of the table, and the table and Package.swift must list the same
   targets.
3. Every Swift file of every target (and of the fuzz harnesses, which Fuzz/run.sh builds)
   imports only its target's direct dependencies and the toolchain's modules. SwiftPM would
   let a target import a module that was only built for another.

Also refused: `@testable import` outside the test targets and the fuzz harnesses (a release
build compiles every other target, the test-support ones too, without testing enabled),
`@_exported import` (it would hand a module's dependencies to its importers) and
`@preconcurrency import` (every module here is Swift 6 strict; none needs it).

    scripts/import-check.py [--root DIR]   check the package at DIR (default: this repository)
    scripts/import-check.py --self-test    show that each kind of violation fails, on a small package
"""

from __future__ import annotations

import bisect
import fnmatch
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

TABLE_DOC = "docs/architecture.md"
TABLE_SECTION = "## Targets"
TABLE_HEADER = ["target", "kind", "role", "may depend on"]

# Modules of the Swift toolchain and the platforms' SDKs, importable from any target. The
# Apple ones are the client library's, on Apple platforms (behind `#if canImport`).
TOOLCHAIN_MODULES = frozenset({
    "Swift", "_Concurrency", "_StringProcessing", "RegexBuilder", "Synchronization", "Distributed",
    "Observation", "Dispatch", "Foundation", "FoundationEssentials", "FoundationInternationalization",
    "FoundationNetworking", "FoundationXML", "Glibc", "Musl", "Darwin", "Android", "WinSDK",
    "XCTest", "Testing",
    "CryptoKit", "DeviceCheck", "Security",
})

# `@preconcurrency import` is allowed for no module: the package's own are Swift 6 strict and
# no file needs it for a C or toolchain module. Name a module here if one ever must.
PRECONCURRENCY_ALLOWED: frozenset[str] = frozenset()

KINDS = ("library", "C", "system library", "executable", "benchmark", "test support", "test", "fuzz")
GROUPS = {"library": {"library", "C", "system library"}, "test-support": {"test support"}}
TESTABLE_KINDS = {"test", "fuzz"}
C_SUFFIXES = {".c", ".h", ".cc", ".cpp", ".m", ".mm"}


class CheckError(Exception):
    """The inputs cannot be read at all (no table, no manifest)."""


# ---------------------------------------------------------------------------------------------
# The table


@dataclass
class Row:
    line: int
    name: str  # a target's name, or a pattern (`*Tests`) when it holds a `*`
    kind: str
    names: set[str] = field(default_factory=set)  # the targets it may depend on, by name
    groups: set[str] = field(default_factory=set)  # "library", "test-support"
    but: set[str] = field(default_factory=set)  # names a group leaves out
    text: str = ""  # the cell as written, for messages

    @property
    def is_pattern(self) -> bool:
        return "*" in self.name

    def allows(self, dependency: str, kinds: dict[str, str]) -> bool:
        if dependency in self.names:
            return True
        if dependency in self.but:
            return False
        return any(kinds.get(dependency) in GROUPS[group] for group in self.groups)


GROUP_ITEM = re.compile(r"any (library|test-support) targets?(?: but (.+))?")


def parse_table(root: pathlib.Path) -> tuple[list[Row], list[str]]:
    path = root / TABLE_DOC
    if not path.is_file():
        raise CheckError(f"{TABLE_DOC} is missing: it holds the targets' table")
    lines = path.read_text().splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == TABLE_SECTION)
    except StopIteration:
        raise CheckError(f"{TABLE_DOC} has no '{TABLE_SECTION}' section") from None
    rows: list[Row] = []
    problems: list[str] = []
    in_table = False
    for index in range(start + 1, len(lines)):
        line = lines[index].strip()
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not in_table:
            if [cell.lower() for cell in cells] == TABLE_HEADER:
                in_table = True
            continue
        if set(line) <= set("|-: "):
            continue
        where = f"{TABLE_DOC}:{index + 1}"
        if len(cells) != 4:
            problems.append(f"{where}: a row needs 4 cells ({', '.join(TABLE_HEADER)}); it has {len(cells)}")
            continue
        name_cell, kind, _, depends = cells
        name = name_cell.strip("`")
        if not re.fullmatch(r"`[^`]+`", name_cell):
            problems.append(f"{where}: the target cell must be one name in backquotes, not {name_cell!r}")
            continue
        if kind not in KINDS:
            problems.append(f"{where}: {name}'s kind {kind!r} is none of: {', '.join(KINDS)}")
            continue
        row = Row(index + 1, name, kind, text=depends)
        if depends not in ("—", "-", ""):
            for item in (part.strip() for part in depends.split(",")):
                group = GROUP_ITEM.fullmatch(item)
                if re.fullmatch(r"`[^`]+`", item):
                    row.names.add(item.strip("`"))
                elif group:
                    row.groups.add(group.group(1))
                    but = group.group(2) or ""
                    row.but |= set(re.findall(r"`([^`]+)`", but))
                    if but and re.sub(r"`[^`]+`|\band\b|\s", "", but):
                        problems.append(f"{where}: write the exceptions as `A` and `B`, not {but!r}")
                else:
                    problems.append(
                        f"{where}: {name} may depend on {item!r}: write a target in backquotes, "
                        "'any library target', 'any test-support target' or '… but `X` and `Y`'")
        rows.append(row)
    if not in_table:
        raise CheckError(f"{TABLE_DOC}, '{TABLE_SECTION}': no table headed | {' | '.join(TABLE_HEADER)} |")
    return rows, problems


# ---------------------------------------------------------------------------------------------
# Package.swift


@dataclass
class Target:
    name: str
    kind: str
    directory: pathlib.Path  # relative to the root
    dependencies: list[str]
    files: list[pathlib.Path]  # .swift files, relative to the root
    excluded: list[pathlib.Path] = field(default_factory=list)  # .swift files Package.swift excludes


def dump_package(root: pathlib.Path) -> dict:
    swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    result = subprocess.run([swift, "package", "dump-package", "--package-path", str(root)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise CheckError(f"swift package dump-package failed:\n{result.stderr.strip()}")
    return json.loads(result.stdout)


def swift_files(root: pathlib.Path, directory: pathlib.Path, exclude: list[str],
                sources: list[str] | None) -> tuple[list[pathlib.Path], list[pathlib.Path]]:
    """A target's .swift files, and those of its directory it excludes."""
    base = root / directory
    excluded = [base / item for item in exclude]
    chosen = [base / item for item in sources] if sources else [base]
    found: list[pathlib.Path] = []
    for top in chosen:
        candidates = [top] if top.is_file() else sorted(top.rglob("*.swift"))
        for path in candidates:
            if path.suffix == ".swift" and not any(path == e or e in path.parents for e in excluded):
                found.append(path.relative_to(root))
    left_out = [p.relative_to(root) for p in sorted(base.rglob("*.swift")) if p.relative_to(root) not in found]
    return found, left_out


def read_targets(root: pathlib.Path, manifest: dict) -> list[Target]:
    targets = []
    for entry in manifest["targets"]:
        name, type_ = entry["name"], entry["type"]
        default = "Tests" if type_ == "test" else "Sources"
        directory = pathlib.Path(entry.get("path") or f"{default}/{name}")
        files, excluded = swift_files(root, directory, entry.get("exclude") or [], entry.get("sources"))
        if type_ == "system":
            kind = "system library"
        elif type_ == "test":
            kind = "test"
        elif type_ == "executable":
            kind = "benchmark" if directory.parts[:1] == ("Benchmarks",) else "executable"
        elif type_ == "regular":
            kind = "test support" if directory.parts[:1] == ("Tests",) else ("library" if files else "C")
        else:
            kind = type_  # a plugin or a macro: no row can match it, so the table check names it
        dependencies = []
        for dependency in entry["dependencies"]:
            # {"byName": [name, condition]}, {"target": [...]} or {"product": [name, package, ...]}
            ((_, value),) = dependency.items()
            dependencies.append(value[0])
        targets.append(Target(name, kind, directory, dependencies, files, excluded))
    return targets


def fuzz_units(root: pathlib.Path) -> list[Target]:
    """The harnesses Fuzz/run.sh builds: Fuzz/<Name>Fuzz/*.swift, with Fuzz/*.swift in each."""
    fuzz = root / "Fuzz"
    if not fuzz.is_dir():
        return []
    units = []
    for directory in sorted(p for p in fuzz.iterdir() if p.is_dir() and p.name.endswith("Fuzz")):
        files = [p.relative_to(root) for p in sorted(directory.rglob("*.swift"))]
        units.append(Target(f"Fuzz/{directory.name}", "fuzz", directory.relative_to(root), [], files))
    shared = [p.relative_to(root) for p in sorted(fuzz.glob("*.swift"))]
    if shared:
        units.append(Target("Fuzz/*.swift", "fuzz", pathlib.Path("Fuzz"), [], shared))
    return units


# ---------------------------------------------------------------------------------------------
# Swift sources: comments and string literals blanked, then every import read


# `"""` opens a multi-line literal only at the end of its line: `#""""#` is a raw `""`. A
# regex literal is `#/…/#`, or `/…/` on one line where an expression starts, not after a space.
CODE_TOKEN = re.compile(r'//|/\*|(#*)("""(?=[ \t]*\r?\n)|")|(#+)/|/(?![\s/*])|[()]')
BLOCK_TOKEN = re.compile(r"/\*|\*/")
BARE_REGEX = re.compile(r"/(?:\\.|[^/\\\n])*/")
REGEX_FOLLOWS = set("(,:=[{!&|?;") | {""}


def code_only(text: str) -> tuple[str, int | None]:
    """The text with comments and string literals (not their interpolations) blanked out,
    newlines kept, so that an `import` inside either is not read and line numbers hold; and
    the offset of a comment, literal or interpolation left open at the end (None if none)."""
    spans: list[tuple[int, int]] = []
    interpolations: list[list] = []  # [open parentheses, hashes, multiline] per open `\(`
    position, size = 0, len(text)
    string: tuple[int, bool] | None = None  # (hashes, multiline) while inside a literal
    start = 0
    unclosed: int | None = None
    while position < size:
        if string is None:
            match = CODE_TOKEN.search(text, position)
            if not match:
                break
            token = match.group()
            if token == "//":
                end = text.find("\n", match.start())
                end = size if end < 0 else end
                spans.append((match.start(), end))
                position = end
            elif token == "/*":
                depth, cursor = 1, match.end()
                while depth:
                    inner = BLOCK_TOKEN.search(text, cursor)
                    if not inner:
                        cursor, unclosed = size, match.start()
                        break
                    depth += 1 if inner.group() == "/*" else -1
                    cursor = inner.end()
                spans.append((match.start(), cursor))
                position = cursor
            elif match.group(3):
                close = text.find("/" + match.group(3), match.end())
                end = size if close < 0 else close + 1 + len(match.group(3))
                if close < 0:
                    unclosed = match.start()
                spans.append((match.start(), end))
                position = end
            elif token == "/":
                regex = BARE_REGEX.match(text, match.start())
                back = match.start() - 1
                while back >= 0 and text[back] in " \t":
                    back -= 1
                before = text[back] if back >= 0 else ""
                if regex and (before in REGEX_FOLLOWS or before == "\n"):
                    spans.append((match.start(), regex.end()))
                    position = regex.end()
                else:
                    position = match.end()  # division, or an operator
            elif token == "(":
                if interpolations:
                    interpolations[-1][0] += 1
                position = match.end()
            elif token == ")":
                position = match.end()
                if interpolations:
                    if interpolations[-1][0] == 0:
                        _, hashes, multiline = interpolations.pop()
                        string, start = (hashes, multiline), position
                    else:
                        interpolations[-1][0] -= 1
            else:
                string, start = (len(match.group(1)), match.group(2) == '"""'), match.end()
                position = match.end()
        else:
            hashes, multiline = string
            delimiter = "#" * hashes
            close = ('"""' if multiline else '"') + delimiter
            inside = re.compile(re.escape("\\" + delimiter) + r"(.)|" + re.escape(close), re.S)
            match = inside.search(text, position)
            if not match:
                spans.append((start, size))
                unclosed = start
                break
            if match.group(1) == "(":
                spans.append((start, match.start()))
                interpolations.append([0, hashes, multiline])
                string = None
            elif match.group(1) is None:
                spans.append((start, match.start()))
                string = None
            position = match.end()
    pieces, last = [], 0
    for begin, end in spans:
        pieces.append(text[last:begin])
        pieces.append(re.sub(r"[^\n]", " ", text[begin:end]))
        last = end
    pieces.append(text[last:])
    if interpolations and unclosed is None:
        unclosed = size
    return "".join(pieces), unclosed


MODIFIERS = ("public", "package", "internal", "private", "fileprivate", "open")
IMPORT = re.compile(
    r"(?:^|;)[ \t]*"
    r"(?P<prefix>(?:(?:@\w+(?:\([^()\n]*\))?|" + "|".join(MODIFIERS) + r")\s+)*)"
    r"(?P<keyword>import)\s+"
    r"(?:(?P<declaration>typealias|struct|class|enum|protocol|let|var|func)\s+)?"
    r"`?(?P<module>[A-Za-z_]\w*)`?(?P<path>(?:\s*\.\s*`?\w+`?)*)",
    re.M)
# Any other `import` that is a keyword: the check must read it or refuse it.
BARE_IMPORT = re.compile(r"(?<![`.\w])import(?![`\w])(?!\s*:)")


@dataclass
class Import:
    line: int
    module: str
    attributes: list[str]
    statement: str


def read_imports(text: str) -> tuple[list[Import], list[int], int | None]:
    """The imports of a Swift file, the lines of an `import` the pattern could not read, and
    the line of a literal or comment the reader found no end to."""
    code, unclosed = code_only(text)
    newlines = [i for i, c in enumerate(code) if c == "\n"]
    line_of = lambda offset: bisect.bisect_right(newlines, offset - 1) + 1  # noqa: E731
    imports, read = [], set()
    for match in IMPORT.finditer(code):
        read.add(match.start("keyword"))
        statement = " ".join(code[match.start("prefix"):match.end()].split())
        attributes = re.findall(r"@(\w+)", match.group("prefix"))
        imports.append(Import(line_of(match.start("keyword")), match.group("module"), attributes, statement))
    unread = [line_of(m.start()) for m in BARE_IMPORT.finditer(code) if m.start() not in read]
    return imports, unread, None if unclosed is None else line_of(unclosed)


# ---------------------------------------------------------------------------------------------
# The check


def row_for(target: Target, rows: list[Row]) -> Row | None:
    for row in rows:
        if not row.is_pattern and row.name == target.name:
            return row
    for row in rows:
        if row.is_pattern and row.kind == target.kind and fnmatch.fnmatchcase(target.name, row.name):
            return row
    return None


def describe(row: Row) -> str:
    return row.text if row.text not in ("", "-", "—") else "nothing (—)"


def check(root: pathlib.Path, manifest: dict) -> tuple[list[str], str, list[str]]:
    rows, failures = parse_table(root)
    targets = read_targets(root, manifest)
    fuzz = fuzz_units(root)
    kinds = {t.name: t.kind for t in targets}
    by_name = {t.name: t for t in targets}
    table = f"{TABLE_DOC}'s Targets table"

    # The table itself: one row per name, and only names that are rows.
    seen: dict[str, int] = {}
    for row in rows:
        if row.name in seen:
            failures.append(f"{TABLE_DOC}:{row.line}: {row.name} has a row already (line {seen[row.name]})")
        seen[row.name] = row.line
    named = {row.name for row in rows if not row.is_pattern}
    for row in rows:
        for name in sorted((row.names | row.but) - named):
            failures.append(
                f"{TABLE_DOC}:{row.line}: {row.name}'s row names {name}, which has no row of its own: "
                "add its row, or correct the name")

    # The table and Package.swift list the same targets, of the same kind.
    for target in targets + fuzz:
        row = row_for(target, rows)
        if row is None:
            source = target.directory if target.kind == "fuzz" else "Package.swift"
            failures.append(
                f"{source}: target {target.name} ({target.kind}) has no row in {table}: add "
                f"| `{target.name}` | {target.kind} | <its role> | <what it may depend on> |")
        elif row.kind != target.kind:
            failures.append(
                f"{TABLE_DOC}:{row.line}: the table's kind for {target.name} is {row.kind}, and Package.swift "
                f"makes it {target.kind}: correct the row or the target")
    for row in rows:
        if row.is_pattern:
            if not any(row_for(t, rows) is row for t in targets + fuzz):
                failures.append(f"{TABLE_DOC}:{row.line}: the row {row.name} matches no {row.kind} target")
        elif row.name not in by_name:
            failures.append(
                f"{TABLE_DOC}:{row.line}: the table lists {row.name}, which Package.swift does not declare: "
                "add the target to Package.swift, or remove its row")

    # Package.swift's arrows, within the table's.
    for target in targets:
        row = row_for(target, rows)
        if row is None:
            continue
        for dependency in target.dependencies:
            if dependency not in kinds:
                failures.append(
                    f"Package.swift: {target.name} → {dependency}: {dependency} is no target of this package "
                    f"(a product of another package?); {table} allows only this package's targets")
            elif not row.allows(dependency, kinds):
                failures.append(
                    f"Package.swift: the arrow {target.name} → {dependency} is not in {table} "
                    f"(line {row.line}: {target.name} may depend on {describe(row)}): remove \"{dependency}\" "
                    f"from {target.name}'s dependencies, or, if the layering itself changes, add it to that row")

    # The sources, within Package.swift's arrows.
    owned: set[pathlib.Path] = {pathlib.Path("Package.swift")}
    files_read = 0
    undeclared: dict[str, dict[str, set[pathlib.Path]]] = {}  # target → module → files
    for target in targets + fuzz:
        owned.update(target.files, target.excluded)
        if target.kind in ("C", "system library"):
            continue
        if not target.files:
            if any(p.suffix in C_SUFFIXES for p in (root / target.directory).rglob("*")):
                continue  # a C target under Tests/ (test support): no Swift to read
            failures.append(f"{target.directory}: target {target.name} has no Swift file here; "
                            "its path in Package.swift is not where its sources are")
            continue
        row = row_for(target, rows)
        if target.kind == "fuzz":
            # Fuzz/run.sh builds a harness's modules beside it; the table's row bounds them.
            allowed = {name for name in kinds if row and row.allows(name, kinds)}
        else:
            allowed = set(target.dependencies)
        for path in target.files:
            files_read += 1
            imports, unread, unclosed = read_imports((root / path).read_text())
            if unclosed is not None:
                failures.append(f"{path}:{unclosed}: a string literal or comment that this check finds no end to, "
                                "so it may miss an import after it: close it, or simplify the literal")
            for line in unread:
                failures.append(f"{path}:{line}: an `import` this check cannot read: "
                                "write it as `[@attributes] [access] import [kind] Module[.Name]` on its own line")
            for imp in imports:
                where = f"{path}:{imp.line}: `{imp.statement}`"
                module = imp.module
                if "_exported" in imp.attributes:
                    failures.append(
                        f"{where}: @_exported hands {module} to every importer of {target.name}, which would "
                        "then use a module it does not declare: import it plainly, and let each importer "
                        "declare and import it itself")
                if "preconcurrency" in imp.attributes and module not in PRECONCURRENCY_ALLOWED:
                    failures.append(
                        f"{where}: no module here needs @preconcurrency (the package is Swift 6 strict, "
                        "and no C or toolchain module calls for it): remove the attribute")
                if "testable" in imp.attributes and target.kind not in TESTABLE_KINDS:
                    failures.append(
                        f"{where}: @testable import in {target.name}, a {target.kind} target: a release build "
                        "compiles it without testing enabled and stops here; import it plainly and use "
                        "what it shows as `package` or `public`")
                if module in TOOLCHAIN_MODULES or module in allowed:
                    continue
                if module == target.name:
                    failures.append(f"{where}: {target.name} imports itself: remove the import")
                elif target.kind == "fuzz":
                    failures.append(
                        f"{where}: {module} is not allowed by the fuzz harnesses' row of {table} "
                        f"({describe(row) if row else 'no row'}): drop the import")
                elif module not in kinds:
                    failures.append(
                        f"{where}: {module} is neither a target of this package nor a toolchain module "
                        f"(scripts/import-check.py, TOOLCHAIN_MODULES): drop the import, or name the module right")
                elif row is not None and row.allows(module, kinds):
                    undeclared.setdefault(target.name, {}).setdefault(module, set()).add(path)
                    failures.append(
                        f"{where}: {target.name} does not declare {module} in Package.swift: add \"{module}\" to "
                        f"{target.name}'s dependencies ({table} allows the arrow), or drop the import")
                else:
                    failures.append(
                        f"{where}: {target.name} does not declare {module} in Package.swift, and {table} does "
                        f"not allow {target.name} → {module} ({target.name} may depend on "
                        f"{describe(row) if row else '— no row'}): drop the import and reach {module} through "
                        "a target that may depend on it")

    # Every Swift file belongs to something this check reads.
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        for name in sorted(names):
            path = pathlib.Path(directory, name).relative_to(root)
            if name.endswith(".swift") and path not in owned:
                failures.append(
                    f"{path}: belongs to no target of Package.swift and to no fuzz harness, so nothing builds "
                    "it and nothing checks its imports: move it into a target's directory, or declare its target")

    summary = (f"import-check: Package.swift's {len(targets)} targets and their dependencies are within {table}; "
               f"{files_read} Swift files ({len(fuzz)} fuzz harness units among them) import only what they declare")
    # The same fix for many lines: said once per target.
    counted = lambda files: f"{len(files)} file" + ("s" if len(files) > 1 else "")  # noqa: E731
    notes = [f"  {name}: add " + ", ".join(f'"{m}" ({counted(files)})' for m, files in sorted(modules.items()))
             for name, modules in sorted(undeclared.items())]
    if notes:
        notes.insert(0, "import-check: imports the table allows but Package.swift does not declare; "
                        "to keep them, add to each target's dependencies:")
    return failures, summary, notes


def run(root: pathlib.Path) -> int:
    try:
        failures, summary, notes = check(root, dump_package(root))
    except CheckError as error:
        print(f"import-check: {error}", file=sys.stderr)
        return 2
    for line in failures + notes:
        print(line, file=sys.stderr)
    if failures:
        print(f"import-check: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    print(summary)
    return 0


# ---------------------------------------------------------------------------------------------
# The self-test: a small package shaped like this one, clean, then one violation at a time


FIXTURE_MANIFEST = """\
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Fixture",
    targets: [
        .target(name: "CShim"),
        .systemLibrary(name: "CSys"),
        .target(name: "Core", dependencies: ["CShim"]),
        .target(name: "Wire"),
        .target(name: "Domain", dependencies: ["Core", "Wire", "CSys"]),
        .target(name: "Top", dependencies: ["Domain", "Core"]),
        .executableTarget(name: "app", dependencies: ["Top"]),
        .executableTarget(name: "bench-core", dependencies: ["Core", "CShim"], path: "Benchmarks/bench-core"),
        .target(name: "Support", dependencies: ["Core"], path: "Tests/Support"),
        .testTarget(name: "CoreTests", dependencies: ["Core", "Support"], exclude: ["Fixtures"]),
        .testTarget(name: "TopTests", dependencies: ["Top", "Domain", "Support"]),
    ]
)
"""

FIXTURE_TABLE = """\
# Architecture

## Targets

| target | kind | role | may depend on |
|---|---|---|---|
| `CShim` | C | the C shim | — |
| `CSys` | system library | a system library | — |
| `Core` | library | the lowest layer | `CShim` |
| `Wire` | library | pure values | — |
| `Domain` | library | the domain | `Core`, `Wire`, `CSys` |
| `Top` | library | the product | `Domain`, `Core`, `Wire` |
| `app` | executable | main | `Top` |
| `bench-*` | benchmark | benchmarks | any library target but `Top` |
| `Support` | test support | test helpers | `Core` |
| `*Tests` | test | suites | any library target, any test-support target |
| `Fuzz/*` | fuzz | harnesses | any library target but `Top` |

## Next
"""

FIXTURE_SOURCES = {
    "Sources/CShim/shim.c": "int shim(void) { return 0; }\n",
    "Sources/CShim/include/CShim.h": "int shim(void);\n",
    "Sources/CSys/module.modulemap": 'module CSys [system] { header "shim.h" }\n',
    "Sources/Core/Core.swift": """\
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
public
import CShim
package import Synchronization
import struct Foundation.Date; import Dispatch

// import Top: a comment is no import
/* import Top, /* nested */ import Top */
let text = "import Top"
let lines = \"\"\"
    import Top
    \\(1 + (2 * 3)) "quoted \\(String("import Top"))"
    \"\"\"
let raw = #"import Top \\(x) "# + ##"\"#"## + "\\(f(import: 1))" + #\"\"\"\"#
let quoted = try? /"(?:[^"\\\\]|\\\\.)*"/.firstMatch(in: text)
let ratio = 4 / 2, half = ratio/2, extended = #/ " import Top /#
public func core() {}
""",
    "Sources/Wire/Wire.swift": "public struct Wire {}\n",
    "Sources/Domain/Domain.swift": "public import Core\nimport Wire\nimport CSys\n",
    "Sources/Top/Top.swift": "import Domain\nimport Core\n",
    "Sources/app/main.swift": "import Top\n",
    "Benchmarks/bench-core/main.swift": "import Core\nimport CShim\n",
    "Tests/Support/Support.swift": "package import Core\nimport Testing\n",
    "Tests/CoreTests/CoreTests.swift": "@testable import Core\nimport Support\nimport Testing\n",
    "Tests/CoreTests/Fixtures/Sample.swift": "import Top\n",
    "Tests/TopTests/TopTests.swift": "@testable import Top\n@testable import Domain\nimport Support\n",
    "Fuzz/CoreFuzz/main.swift": "@testable import Core\nimport Domain\n",
    "Fuzz/Require.swift": "func require(_ condition: Bool) {}\n",
}


def write_fixture(root: pathlib.Path) -> None:
    for relative, text in {"Package.swift": FIXTURE_MANIFEST, TABLE_DOC: FIXTURE_TABLE,
                           **FIXTURE_SOURCES}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# (name, file, text appended to it, what each failure must say). Domain may not reach Top: the
# file is Sources/Domain/Domain.swift unless said.
SOURCE_CASES = [
    ("plain import", "Sources/Domain/Domain.swift", "import Top\n",
     ["Sources/Domain/Domain.swift:4: `import Top`: Domain does not declare Top in Package.swift, "
      "and docs/architecture.md's Targets table does not allow Domain → Top"]),
    ("public import", None, "public import Top\n", [":4: `public import Top`: Domain does not declare Top"]),
    ("package import", None, "package import Top\n", [":4: `package import Top`: Domain does not declare Top"]),
    ("internal import", None, "internal import Top\n", [":4: `internal import Top`: Domain does not declare"]),
    ("private import", None, "private import Top\n", [":4: `private import Top`: Domain does not declare"]),
    ("fileprivate import", None, "fileprivate import Top\n", [":4: `fileprivate import Top`: Domain does not"]),
    ("@preconcurrency import of a declared module", None, "@preconcurrency import Wire\n",
     [":4: `@preconcurrency import Wire`: no module here needs @preconcurrency"]),
    ("@preconcurrency on its own line, of a forbidden module", None, "@preconcurrency\nimport Top\n",
     [":5: `@preconcurrency import Top`: no module here needs", ":5: `@preconcurrency import Top`: Domain does not"]),
    ("@testable import in a library target", None, "@testable import Core\n",
     [":4: `@testable import Core`: @testable import in Domain, a library target"]),
    ("@testable import in a test-support target", "Tests/Support/Support.swift", "@testable import Core\n",
     ["Tests/Support/Support.swift:3: `@testable import Core`: @testable import in Support, a test support target"]),
    ("@testable import in a benchmark", "Benchmarks/bench-core/main.swift", "@testable import Core\n",
     ["Benchmarks/bench-core/main.swift:3: `@testable import Core`: @testable import in bench-core"]),
    ("@_exported import", None, "@_exported import Wire\n", [":4: `@_exported import Wire`: @_exported hands Wire"]),
    ("@_implementationOnly import", None, "@_implementationOnly import Top\n",
     [":4: `@_implementationOnly import Top`: Domain does not declare Top"]),
    ("attribute with arguments and a modifier", None, "@_spi(Internal) public import Top\n",
     [":4: `@_spi(Internal) public import Top`: Domain does not declare Top"]),
    ("import struct X.Y", None, "import struct Top.Thing\n", [":4: `import struct Top.Thing`: Domain does not"]),
    ("import func X.y", None, "import func Top.top\n", [":4: `import func Top.top`: Domain does not declare"]),
    ("import of a submodule", None, "import Top.Inner\n", [":4: `import Top.Inner`: Domain does not declare"]),
    ("second import after a semicolon", None, "import Wire; import Top\n",
     [":4: `import Top`: Domain does not declare Top"]),
    ("import inside #if canImport", None, "#if canImport(Top)\n    import Top\n#endif\n",
     [":5: `import Top`: Domain does not declare Top"]),
    ("import inside a dead #else", None, "#if canImport(Wire)\n#else\n    import Top\n#endif\n",
     [":6: `import Top`: Domain does not declare Top"]),
    ("arrow the table allows but Package.swift lacks", "Sources/Top/Top.swift", "import Wire\n",
     ["Sources/Top/Top.swift:3: `import Wire`: Top does not declare Wire in Package.swift: add \"Wire\" to "
      "Top's dependencies"]),
    ("a transitive dependency", "Sources/Top/Top.swift", "import CShim\n",
     ["Sources/Top/Top.swift:3: `import CShim`: Top does not declare CShim"]),
    ("an unknown module", None, "import Alamofire\n",
     [":4: `import Alamofire`: Alamofire is neither a target of this package nor a toolchain module"]),
    ("a fuzz harness beyond its row", "Fuzz/CoreFuzz/main.swift", "import Top\n",
     ["Fuzz/CoreFuzz/main.swift:3: `import Top`: Top is not allowed by the fuzz harnesses' row"]),
    ("an import split over lines the check cannot read", None, "import\n    (Top)\n",
     [":4: an `import` this check cannot read"]),
    ("a literal left open, which would hide what follows", None, 'let text = """\nimport Top\n',
     [":4: a string literal or comment that this check finds no end to"]),
    ("a Swift file outside every target", "Sources/Stray/Stray.swift", "import Top\n",
     ["Sources/Stray/Stray.swift: belongs to no target of Package.swift"]),
]

# Package.swift's own cases, each costing a manifest build: the arrows in one edit (through the
# entry point, which must exit 1), a target without a row in another. (name, [(old, new)], wanted)
MANIFEST_CASES = [
    ("forbidden arrows in Package.swift: a library's, a benchmark's past its rule, a test's on an executable",
     [('.target(name: "Core", dependencies: ["CShim"])', '.target(name: "Core", dependencies: ["CShim", "Wire"])'),
      ('["Core", "CShim"], path:', '["Core", "CShim", "Top"], path:'),
      ('["Top", "Domain", "Support"]', '["Top", "Domain", "Support", "app"]')],
     ["Package.swift: the arrow Core → Wire is not in docs/architecture.md's Targets table "
      "(line 9: Core may depend on `CShim`): remove \"Wire\" from Core's dependencies",
      "Package.swift: the arrow bench-core → Top is not in docs/architecture.md's Targets table "
      "(line 14: bench-core may depend on any library target but `Top`)",
      "Package.swift: the arrow TopTests → app is not in"]),
    ("a target missing from the table",
     [('.target(name: "Wire"),', '.target(name: "Wire"),\n        .target(name: "Extra", path: "Sources/Wire"),')],
     ["Package.swift: target Extra (library) has no row in docs/architecture.md's Targets table: add "]),
]
# (name, old, new, wanted) on the table.
TABLE_CASES = [
    ("a row for a target Package.swift lacks", "| `Wire` | library | pure values | — |\n",
     "| `Wire` | library | pure values | — |\n| `JSON` | library | JSON | — |\n",
     ["docs/architecture.md:11: the table lists JSON, which Package.swift does not declare"]),
    ("a target's row removed", "| `Wire` | library | pure values | — |\n", "",
     ["Package.swift: target Wire (library) has no row in",
      "docs/architecture.md:10: Domain's row names Wire, which has no row of its own",
      "docs/architecture.md:11: Top's row names Wire, which has no row of its own"]),
    ("a kind the table gets wrong", "| `Core` | library |", "| `Core` | executable |",
     ["docs/architecture.md:9: the table's kind for Core is executable, and Package.swift makes it library"]),
    ("a group the check does not know", "any test-support target", "any support target",
     ["docs/architecture.md:16: *Tests may depend on 'any support target'",
      "Package.swift: the arrow CoreTests → Support is not in",
      "Package.swift: the arrow TopTests → Support is not in"]),
]


def self_test() -> int:
    problems: list[str] = []
    passed = 0
    script = pathlib.Path(__file__).resolve()

    def expect(name: str, failures: list[str], wanted: list[str]) -> None:
        nonlocal passed
        missing = [w for w in wanted if not any(w in f for f in failures)]
        if missing or len(failures) != len(wanted):
            problems.append(f"{name}: wanted {len(wanted)} failure(s) saying {wanted}; got {failures}")
        else:
            passed += 1
            print(f"  fails as it should: {name}\n    " + "\n    ".join(failures))

    def entry_point(root: pathlib.Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), "--root", str(root)], capture_output=True, text=True)

    with tempfile.TemporaryDirectory(prefix="import-check-") as directory:
        root = pathlib.Path(directory)
        write_fixture(root)
        clean = entry_point(root)
        if clean.returncode != 0:
            problems.append(f"the clean package fails (exit {clean.returncode}):\n{clean.stderr}")
        else:
            print(f"  the clean package passes: {clean.stdout.strip()}")
        manifest = dump_package(root)

        def edited(relative: str, change, run) -> list[str]:
            path = root / relative
            before = path.read_text() if path.exists() else None
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(change(before or ""))
            try:
                return run()
            finally:
                if before is None:
                    path.unlink()
                    if not any(path.parent.iterdir()):
                        path.parent.rmdir()
                else:
                    path.write_text(before)

        def replacing(pairs: list[tuple[str, str]]):
            def change(before: str) -> str:
                for old, new in pairs:
                    if old not in before:
                        raise AssertionError(f"the fixture has no {old!r}")
                    before = before.replace(old, new, 1)
                return before
            return change

        in_process = lambda: check(root, manifest)[0]  # noqa: E731
        for name, relative, text, wanted in SOURCE_CASES:
            relative = relative or "Sources/Domain/Domain.swift"
            wanted = [w if w.startswith(("Sources", "Tests", "Benchmarks", "Fuzz")) else relative + w for w in wanted]
            expect(name, edited(relative, lambda before: before + text, in_process), wanted)
        for name, old, new, wanted in TABLE_CASES:
            expect(name, edited(TABLE_DOC, replacing([(old, new)]), in_process), wanted)

        def through_entry_point() -> list[str]:
            result = entry_point(root)
            if result.returncode != 1:
                problems.append(f"the entry point exits {result.returncode} on a violation, not 1")
            return [line for line in result.stderr.splitlines() if not line.startswith("import-check:")]

        (name, pairs, wanted), (name2, pairs2, wanted2) = MANIFEST_CASES
        expect(name + " (the entry point, exit 1)", edited("Package.swift", replacing(pairs), through_entry_point),
               wanted)
        expect(name2, edited("Package.swift", replacing(pairs2), lambda: check(root, dump_package(root))[0]), wanted2)

    for problem in problems:
        print(f"import-check --self-test: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"import-check --self-test: the clean package passes; {passed} violations each fail with their message")
    return 0


def main(arguments: list[str]) -> int:
    if arguments == ["--self-test"]:
        return self_test()
    if not arguments:
        return run(pathlib.Path(__file__).resolve().parent.parent)
    if len(arguments) == 2 and arguments[0] == "--root":
        return run(pathlib.Path(arguments[1]).resolve())
    print("\n".join(line.strip() for line in __doc__.strip().splitlines()[-2:]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
