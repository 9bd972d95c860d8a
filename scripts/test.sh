#!/usr/bin/env bash
# Builds every target with warnings as errors and runs every test (what `make test` and CI run).
# Installs the Debian packages the tests need first when they are missing (scripts/setup.sh):
# the tests start their own redis-server, PostgreSQL, nginx and mock upstreams on loopback;
# and the Python venv of scripts/phoenix.sh, whose opentelemetry-proto the trace tests use.
#
#   scripts/test.sh                      every test
#   scripts/test.sh --filter StoreTests  arguments go to `swift test`
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# The trace tests decode what the gateway sends with opentelemetry-proto, from this venv
# (installed once, outside the clone, with the collector `make traces-check` runs).
scripts/phoenix.sh install >/dev/null
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests -Xswiftc -warnings-as-errors
swift test --skip-build "$@"
