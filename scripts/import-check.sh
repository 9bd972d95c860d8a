#!/usr/bin/env bash
# Fails when a target imports a module its place in the architecture forbids
# (docs/architecture.md, "Targets"). SwiftPM lets a target import a module that was only
# built for another one, so Package.swift alone does not keep the arrows one-way.
# Also fails on a `@testable import` outside the test targets: `swift build -c release`
# builds every other target (the test-support ones in Tests/ too) without testing enabled,
# and such an import stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import pathlib, re, sys

system = {"Foundation", "Glibc", "Musl", "Darwin", "Synchronization", "Dispatch"}
allowed = {
    # The product's domain: pure, no I/O, no HTTP (ChatAPI is pure values too: JSON).
    "TextTasks": {"ChatAPI"},
    # Logs, metrics, clocks, periodic work.
    "Telemetry": {"EventLoop", "ChatAPI", "Store"},
    # No HTTP statuses, no server: an upstream failure is a value.
    "Upstream": {"HTTPClient", "ChatAPI", "TextTasks", "Telemetry", "EventLoop"},
    "Access": {"Crypto", "Redis", "Store", "HTTPClient", "ChatAPI", "EventLoop", "Telemetry"},
    # "Answer a task" through a protocol: no pool, no route.
    "Jobs": {"TextTasks", "Store", "ChatAPI", "EventLoop", "Telemetry"},
    "Gateway": {"HTTPServer", "HTTP1", "HTTPClient", "ChatAPI", "Store", "Postgres", "Crypto", "Redis",
                "EventLoop", "Telemetry", "TextTasks", "Upstream", "Access", "Jobs", "AdminConsole"},
    "AdminConsole": set(),
}
pattern = re.compile(r"^\s*(?:@testable\s+|public\s+|package\s+|internal\s+|@_\w+(?:\([^)]*\))?\s+)*import\s+(?:struct\s+|enum\s+|class\s+|func\s+)?(\w+)", re.M)
failures = []
for target, ok in allowed.items():
    files = sorted(pathlib.Path("Sources", target).rglob("*.swift"))
    if not files:
        failures.append(f"{target}: no sources found")
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = pattern.match(line)
            if match and match.group(1) not in ok | system:
                failures.append(f"{path}:{number}: {target} must not import {match.group(1)}")
# What a release build compiles: Sources/, Benchmarks/ and the folders of Tests/ that are not
# test targets (TestSupport, GatewayTestSupport). Fuzz/ builds with testing enabled.
testable = re.compile(r"^\s*@testable\s+import\b")
release_roots = [pathlib.Path("Sources"), pathlib.Path("Benchmarks")] + sorted(
    folder for folder in pathlib.Path("Tests").iterdir() if folder.is_dir() and not folder.name.endswith("Tests"))
for root in release_roots:
    for path in sorted(root.rglob("*.swift")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if testable.match(line):
                failures.append(f"{path}:{number}: @testable import outside a test target breaks `swift build -c release`")
for failure in failures:
    print(failure, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"import-check: {len(allowed)} targets import only what they may; no @testable import outside the test targets")
PY
