#!/usr/bin/env bash
# Fills a store with ledger rows for the operator console's measurements: N rows (default
# 10,000,000) over 30 days, 50 callers and some guests, 4 tasks, 2 models, ~3 % failures of four
# codes, ~5 % cache hits, realistic upstream times; then usage_daily and both roll-ups are made
# from the rows with the back-fill migration 6 runs. The rows are made by the database (a
# recursive CTE on SQLite, generate_series on Postgres), a million a transaction.
#
#   Benchmarks/seed-ledger.sh --sqlite PATH [--rows N] [--days D]
#   Benchmarks/seed-ledger.sh --postgres "$DATABASE_URL" [--rows N] [--days D]
#
# The store is opened (and migrated) by bench-store first; a SQLite file should be new.
# Settings (environment): SWIFT_BUILD_FLAGS="--static-swift-stdlib".
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
[ $# -gt 0 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
swift build -c release --product bench-store "${build_flags[@]}" >&2
bin=$(swift build -c release --show-bin-path "${build_flags[@]}")
start=$(date +%s)
"$bin/bench-store" seed "$@"
echo "seeded in $(($(date +%s) - start)) s"
