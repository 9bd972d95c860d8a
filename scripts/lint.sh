#!/usr/bin/env bash
# The source's form, as CI checks it (make lint):
#   1. `swift format lint --strict` with the checked-in .swift-format: any finding fails;
#   2. no line of a tracked .swift file longer than 120 characters. The formatter cannot break
#      a string literal, so a long literal passes its check and is caught here. Characters, not
#      bytes, are counted: Persian text takes two bytes a letter.
# Fix the form with: swift format -i -r Sources Tests Benchmarks Fuzz Package.swift
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

status=0

echo "swift format lint --strict"
if ! swift format lint --strict --parallel -r Sources Tests Benchmarks Fuzz Package.swift; then
    echo "FAIL: swift format lint found the findings above; fix: swift format -i -r Sources Tests Benchmarks Fuzz Package.swift" >&2
    status=1
fi

echo "lines of at most 120 characters"
# NUL-separated paths, so any file name is read whole.
if ! git ls-files -z -- '*.swift' | python3 -c '
import collections
import os
import sys

limit = 120
long_lines = []
for path in sys.stdin.buffer.read().split(b"\0"):
    # A tracked file deleted from the work tree is not read.
    if not path or not os.path.exists(path):
        continue
    name = path.decode("utf-8", "surrogateescape")
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            length = len(line.rstrip("\r\n"))
            if length > limit:
                long_lines.append((name, number, length))
for name, number, length in long_lines:
    print(f"{name}:{number}: {length} characters", file=sys.stderr)
if long_lines:
    # A count per folder (two levels), so a failure shows at a glance where the lines are.
    folders = collections.Counter("/".join(name.split("/")[:2]) for name, _, _ in long_lines)
    summary = ", ".join(f"{folder} {count}" for folder, count in sorted(folders.items()))
    print(f"FAIL: {len(long_lines)} lines longer than {limit} characters: {summary}", file=sys.stderr)
    sys.exit(1)
'; then
    status=1
fi

[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
