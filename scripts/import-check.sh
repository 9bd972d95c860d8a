#!/usr/bin/env bash
# The targets' arrows: docs/architecture.md's "Targets" table is the rule, Package.swift's
# dependencies must be within it, and every Swift file may import only its target's direct
# dependencies (scripts/import-check.py). SwiftPM alone would let a target import a module
# that was only built for another.
#
#   scripts/import-check.sh              check this repository
#   scripts/import-check.sh --self-test  each kind of violation fails, on a small package
set -euo pipefail
cd "$(dirname "$0")/.."
# `swift package dump-package` reads Package.swift.
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
exec python3 scripts/import-check.py "$@"
