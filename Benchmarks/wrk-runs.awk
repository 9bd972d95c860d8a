# One wrk run's figures on one line: target connections requests/s p50_ms p99_ms p99.9_ms,
# then the target's and the mock's CPU µs per request when the file has a `cpu_ticks OWN MOCK`
# line (and `ticks`, the clock ticks a second, is given).
#   awk -v target=NAME -v c=CONNECTIONS [-v ticks=CLK_TCK] -f Benchmarks/wrk-runs.awk FILE
function ms(text,   value, unit) {
    value = text; sub(/[a-z]+$/, "", value)
    unit = text; sub(/^[0-9.]+/, "", unit)
    return value * (unit == "us" ? 0.001 : unit == "s" ? 1000 : unit == "m" ? 60000 : 1)
}
BEGIN { p999 = 0; own = 0; mock = 0 }
/requests in / { requests = $1 }
/^cpu_ticks / { own = $2; mock = $3 }
/^Requests\/sec:/ { rps = $2 }
/^[ \t]+50%/ { p50 = ms($2) }
/^[ \t]+99%/ { p99 = ms($2) }
/^p99.9_us / { p999 = $2 / 1000 }
END {
    per = requests > 0 && ticks > 0 ? 1e6 / ticks / requests : 0
    printf "%s %s %s %s %s %s %s %s\n", target, c, rps, p50, p99, p999, own * per, mock * per
}
