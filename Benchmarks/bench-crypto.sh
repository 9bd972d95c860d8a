#!/usr/bin/env bash
# What does the gateway's cryptography cost? `make bench-crypto` runs this.
#
# Builds bench-crypto (release) and runs it: SHA-256 of 48 bytes (a store token), 1 KiB (a
# JWT) and 1 MiB, through libcrypto and through the pure-Swift SHA-256 it replaced;
# HMAC-SHA-256 of 1 KiB; RS256 (RSA-2048) and ES256 (P-256) verification of a 600-byte
# message. Figures are nanoseconds an operation, best of RUNS runs.
#
# Settings (environment):
#   RUNS=5                    runs of each operation (the best counts), after one warm-up run
#   RUN_MS=200                length of one run in milliseconds
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

runs=${RUNS:-5}
run_ms=${RUN_MS:-200}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"

echo "TextGateway crypto benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr); libcrypto $(pkg-config --modversion libcrypto 2>/dev/null || echo '?')"
echo

say "bench-crypto: building bench-crypto (release)"
build_release bench-crypto
"$bin/bench-crypto" --runs "$runs" --milliseconds "$run_ms" || die "bench-crypto failed"
