#!/usr/bin/env bash
# TextGateway in front of a real model server: llama.cpp's llama-server with SmolLM2-135M-
# Instruct (both from PyPI, built once by scripts/llama-server.sh into LLAMA_DIR, outside the
# clone), a release text-gateway with a SQLite store in front of it (and a second one for the
# hang-up, whose answers may be longer), then Tests/python/real_upstream_check.py (the four tasks, a stream, /v1 plain and streamed,
# format: json, the context overflowing, a hang-up mid-stream, a job chunked to the window)
# and `text-gateway eval` once against it (its figures are printed, not asserted).
#
#   scripts/real-upstream-check.sh    (make real-upstream-check)
#
#   BIN=<dir>                     a release text-gateway already built there (not built then)
#   SWIFT_BUILD_FLAGS=...         extra `swift build` flags, e.g. "--scratch-path /tmp/build"
#   REAL_UPSTREAM_EVAL=all        eval's every task (the default; about 15 minutes on 2 cores),
#                     summarize   the named tasks only (comma-separated), 0: none (CI: its figures assert
#                                 nothing, and the eval command has its tests against the mock)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

started=$(now)
# Its last line names the directory it chose ("<dir> ready").
llama_dir=$(scripts/llama-server.sh | sed -n 's/ ready$//p' | tail -n 1)
[ -x "$llama_dir/llama-server" ] || die "scripts/llama-server.sh did not make llama-server"
say "real-upstream-check: llama-server and model ready in $(since "$started")"

read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
build_release text-gateway

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-real-upstream.XXXXXX")
llama_pid='' started_pid='' long_pid=''
stop_on_exit "$work" started_pid long_pid llama_pid

# The model's window: 2,048 tokens, one slot (so /metrics' requests_processing is that slot, and
# a job asks one call at a time: JOB_CONCURRENCY=1), and a fixed seed: the same answers every run.
# No polling (--poll 0): llama.cpp's threads otherwise wait for each other spinning between
# tokens. Within a token they still do, at every operation, so on a busy machine a thread waits
# on one the kernel has put aside: LLAMA_THREADS=1 (CI's) spends half the CPU there (the check
# beside `stress-ng --cpu 2`: 121 s of CPU and 199 s with one thread, 277 s and 292 s with two),
# and alone takes twice as long (118 s; about 60 with two, the default: one per core).
context=2048
llama_port=$(free_port)
"$llama_dir/llama-server" -m "$llama_dir/model.gguf" --host 127.0.0.1 --port "$llama_port" \
    -c "$context" -np 1 -t "${LLAMA_THREADS:-$(nproc)}" --poll 0 --seed 42 --metrics >"$work/llama.log" 2>&1 &
llama_pid=$!
llama=http://127.0.0.1:$llama_port
for _ in $(seq 600); do # up to 60 s to load
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$llama/health")" = 200 ] && break
    kill -0 "$llama_pid" 2>/dev/null || die "llama-server exited: $(tail -5 "$work/llama.log")"
    sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$llama/health")" = 200 ] || die "llama-server not ready in 60 s"
say "real-upstream-check: llama-server on $llama (context $context tokens, $(basename "$(readlink -f "$llama_dir/model.gguf")"))"

# Chunks of 400 estimated tokens (2.5 characters a token) are about 1,000 characters: well
# inside the window with the prompt and the answer, as an operator sizes them for a model.
chunk_tokens=400
# This small model often repeats itself until MAX_TOKENS, so the answers' cap is the check's
# cost: beside CI's builds on two cores a token took up to 0.75 s (a 300-token answer 225 s,
# 5 s alone). At 64 tokens a step takes seconds alone and under a minute there, and the upstream
# timeout of 300 s is a margin, not a bound the machine's load decides. A second gateway with
# 300 tokens serves the hang-up: its stream is cut after four tokens, and the slot must stop
# within 50 more.
upstream_settings=(
    DARVAREH_BASE_URL="$llama/v1" DARVAREH_API_KEY=unused-by-llama-server DARVAREH_MODEL_ID=smollm2-135m-instruct
    UPSTREAM_TIMEOUT_SECONDS=300 STREAM_FIRST_TOKEN_TIMEOUT_SECONDS=300 RATE_LIMITS=off LOG_LEVEL=warning
)
gateway_settings=(
    "${upstream_settings[@]}" DATABASE_URL="sqlite:$work/gateway/textgateway.sqlite" MAX_TOKENS=64
    JOB_CHUNK_TOKENS="$chunk_tokens" JOB_CHUNK_OVERLAP_TOKENS=20 JOB_CONCURRENCY=1
)
start_text_gateway "$bin" "$work/long" "$work/long.log" "${upstream_settings[@]}" \
    DATABASE_URL="sqlite:$work/long/textgateway.sqlite" MAX_TOKENS=300 ||
    die "text-gateway (300 tokens) did not start: $(tail -5 "$work/long.log")"
# shellcheck disable=SC2034 # stop_on_exit stops it by this name
long_pid=$started_pid
long_gateway=http://127.0.0.1:$started_port
start_text_gateway "$bin" "$work/gateway" "$work/gateway.log" "${gateway_settings[@]}" ||
    die "text-gateway did not start: $(tail -5 "$work/gateway.log")"
gateway=http://127.0.0.1:$started_port
say "real-upstream-check: text-gateway on $gateway (MAX_TOKENS=64), $long_gateway (300)"

status=0
python3 Tests/python/real_upstream_check.py --gateway "$gateway" --long-gateway "$long_gateway" --llama "$llama" \
    --chunk-tokens "$chunk_tokens" || status=$?

eval_tasks=${REAL_UPSTREAM_EVAL:-all}
if [ "$eval_tasks" != 0 ]; then
    task_flags=()
    if [ "$eval_tasks" != all ]; then
        IFS=, read -r -a names <<<"$eval_tasks"
        for task in "${names[@]}"; do task_flags+=(--task "$task"); done
    fi
    echo
    echo "text-gateway eval ${task_flags[*]:-(every task)} against llama-server (SmolLM2-135M-Instruct), not asserted:"
    eval_started=$(now)
    # The eval's answers are whole (300 tokens): it is about what the model writes.
    (cd "$work/gateway" && env -i PATH="$PATH" HOME="${HOME:-/tmp}" "${gateway_settings[@]}" MAX_TOKENS=300 \
        "$bin/text-gateway" eval --concurrency 1 --min-pass 0 ${task_flags[@]+"${task_flags[@]}"} --env production) || true
    echo "eval took $(since "$eval_started")"
fi
[ "$status" -eq 0 ] || { say "gateway logs:"; tail -20 "$work/gateway.log" "$work/long.log" >&2; }
exit "$status"
