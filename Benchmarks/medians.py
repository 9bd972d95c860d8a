"""The medians table of an interleaved benchmark, beside its reference target.

    medians.py RUNS_FILE --reference off --column store --targets off,fast,strict
               --connections 1,64 [--ratio fast:64:0.95]... [--added-p50 fast:1:0.020]...

RUNS_FILE has one line a wrk run, "target connections requests/s p50_ms p99_ms ..."
(scripts/processes.sh's wrk_run_lines). Prints a Markdown table of the medians — requests/s,
× the reference, p50, p50 added to the reference's, p99 — then a line for each budget:
--ratio TARGET:CONNECTIONS:MINIMUM (requests/s against the reference's) and --added-p50
TARGET:CONNECTIONS:MAXIMUM_MS.
"""
import argparse
import statistics

parser = argparse.ArgumentParser()
parser.add_argument("runs")
parser.add_argument("--reference", required=True)
parser.add_argument("--column", required=True)
parser.add_argument("--targets", required=True)
parser.add_argument("--connections", required=True)
parser.add_argument("--ratio", action="append", default=[])
parser.add_argument("--added-p50", action="append", default=[])
# Two more columns: the CPU µs per request of the target and of the other processes (the last
# two figures of each line), under these two names separated by a comma.
parser.add_argument("--cpu")
arguments = parser.parse_args()

rows = {}
for line in open(arguments.runs):
    target, c, *values = line.split()
    rows.setdefault((target, int(c)), []).append([float(v) for v in values[:3] + values[4:6]])


def med(target, c, i):
    runs = rows.get((target, c))
    return statistics.median(r[i] for r in runs) if runs else float("nan")


reference = arguments.reference
counts = [int(c) for c in arguments.connections.split(",") if c]
cpu = arguments.cpu.split(",") if arguments.cpu else []
print(f"| connections | {arguments.column} | requests/s | × {reference} | p50 ms | added p50 ms | p99 ms |" + "".join(f" {name} |" for name in cpu))
print("|---:|---|---:|---:|---:|---:|---:|" + "---:|" * len(cpu))
for c in counts:
    for target in arguments.targets.split(","):
        rps, p50, p99 = (med(target, c, i) for i in range(3))
        extra = "".join(f" {med(target, c, 3 + i):.0f} |" for i in range(len(cpu)))
        print(f"| {c} | {target} | {rps:.0f} | {rps / med(reference, c, 0):.3f} | {p50:.3f} | {p50 - med(reference, c, 1):+.3f} | {p99:.3f} |" + extra)
print()


def verdict(ok):
    return "met" if ok else "NOT met"


for budget in arguments.ratio:
    target, c, minimum = budget.split(":")
    c, minimum = int(c), float(minimum)
    if c in counts:
        ratio = med(target, c, 0) / med(reference, c, 0)
        print(f"budget, {c} connections: {target} {ratio:.3f}x {reference} (>= {minimum:.2f}: {verdict(ratio >= minimum)})")
for budget in arguments.added_p50:
    target, c, maximum = budget.split(":")
    c, maximum = int(c), float(maximum)
    if c in counts:
        added = med(target, c, 1) - med(reference, c, 1)
        plural = "connection" if c == 1 else "connections"
        print(f"budget, {c} {plural}: {target} adds p50 {added:+.3f} ms (<= +{maximum:.3f}: {verdict(added <= maximum)})")
