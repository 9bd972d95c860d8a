#!/usr/bin/env bash
# Builds and runs a libFuzzer target.
#
#   Fuzz/run.sh <Target> [seconds=60] [extra libFuzzer args...]
#   Fuzz/run.sh <Target> runs=<N> [jobs=<J>] [extra libFuzzer args...]
#
# Targets: RequestParser, JSONValue, DotEnv, SSE, ProcessBody, JWT, AppAttestCBOR, AndroidKeyDescription,
# HTTPResponse.
#
# The product sources a target needs are built as the modules they belong to (HTTP1,
# JSON, ChatAPI, Gateway, with only the files the target needs), with coverage (one
# `-sanitize=fuzzer,address` flag: two separate -sanitize flags build a fuzzer without
# coverage) and `-enable-testing`; the harness Fuzz/<Target>Fuzz/main.swift reaches their
# internals with `@testable import` and is built with ASan but without coverage, so the
# fuzzer is guided by the product's branches only and does not pay for the harness's.
# (JSONValue still compiles its harness into the same module as the parser.)
#
# The seed corpus Fuzz/corpus/<Target> is copied into the work corpus
# Fuzz/corpus-work/<Target> (gitignored, kept between runs); crash inputs go to
# Fuzz/artifacts/<Target>/, logs to Fuzz/.build/<Target>*.log.
#
# With seconds, one fuzzer runs that long. With runs=N, J fuzzers (default 1) share the work
# corpus and run ceil(N/J) executions each; the summary adds up their real totals. Either
# way the last line is "<Target>: N runs in S s (R exec/s), no crash", also written to
# Fuzz/.build/<Target>.summary, and the exit status is non-zero on any crash, leak, timeout
# or out-of-memory.
set -euo pipefail

cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/run.sh RequestParser|JSONValue|DotEnv|SSE|ProcessBody|JWT|AppAttestCBOR|AndroidKeyDescription|HTTPResponse [seconds=60 | runs=N [jobs=J]] [extra libFuzzer args...]}
shift
seconds=60
runs=
jobs=1
if [ $# -gt 0 ]; then
    case "$1" in
        runs=*) runs=${1#runs=} ;;
        *) seconds=$1 ;;
    esac
    shift
fi
if [ $# -gt 0 ] && [[ "$1" == jobs=* ]]; then
    jobs=${1#jobs=}
    shift
fi

# modules: "Module:files" built in order, each file list a glob. inline: sources compiled
# into the harness's own module. options: libFuzzer defaults for the target. includes and
# links: C modules' directories and the libraries they link (libcrypto for Crypto).
modules=()
inline=()
options=()
includes=()
links=()
case "$target" in
    RequestParser)
        modules=("HTTP1:Sources/HTTP1/*.swift")
        ;;
    JSONValue)
        # The parser with its scans, both readings of a chat completion built on it, and the
        # byte reading of a stream's chunk.
        modules=("JSON:Sources/JSON/JSONValue.swift Sources/JSON/JSONByteParser+Validation.swift Sources/JSON/JSONMemberNames.swift Sources/JSON/JSONStringScan.swift Sources/JSON/UTF8Text.swift"
            "ChatAPI:Sources/ChatAPI/ChatCompletion.swift Sources/ChatAPI/ChatCompletion+JSONValue.swift Sources/ChatAPI/ChatCompletionReader.swift Sources/ChatAPI/ChatCompletionChunk.swift Sources/ChatAPI/Usage.swift Sources/ChatAPI/ChatRole.swift Sources/ChatAPI/MessageContent.swift")
        ;;
    DotEnv)
        modules=("Gateway:Sources/Gateway/Config/DotEnv.swift Sources/Gateway/Config/DotEnvError.swift")
        ;;
    SSE)
        modules=("ChatAPI:Sources/ChatAPI/ServerSentEvent*.swift")
        ;;
    ProcessBody)
        modules=(
            "HTTP1:Sources/HTTP1/*.swift"
            "JSON:Sources/JSON/JSONValue.swift Sources/JSON/JSONByteParser+Validation.swift Sources/JSON/JSONMemberNames.swift Sources/JSON/JSONStringScan.swift Sources/JSON/UTF8Text.swift"
            "TextTasks:Sources/TextTasks/TextLimits.swift Sources/TextTasks/OutputFormat.swift Sources/TextTasks/TextTrim.swift Sources/TextTasks/CharacterCount.swift Sources/TextTasks/TextTask.swift Sources/TextTasks/PromptText.swift"
            "Upstream:Sources/Upstream/UpstreamFailureKind.swift"
            "Access:Sources/Access/RefusalReason.swift Sources/Access/Budgets/BudgetScope.swift"
            "Gateway:Sources/Gateway/Routes/ProcessRequest.swift Sources/Gateway/Pipeline/GatewayError.swift Sources/Gateway/Pipeline/Language.swift Sources/Gateway/Pipeline/HeaderElement.swift"
        )
        # Room for a text of 12,000 characters and then some.
        options=(-max_len=16384)
        ;;
    JWT)
        # The JWS parser, base64url, the claims checks and the JWK Set parser, over libcrypto.
        modules=(
            "Crypto:Sources/Crypto/*.swift"
            "JSON:Sources/JSON/JSONValue.swift Sources/JSON/JSONByteParser+Validation.swift Sources/JSON/JSONMemberNames.swift Sources/JSON/JSONStringScan.swift Sources/JSON/UTF8Text.swift Sources/JSON/JSONWriter.swift"
            "Telemetry:Sources/Telemetry/Instant.swift"
            "Pricing:Sources/Pricing/Micros.swift"
            "Access:Sources/Access/Budgets/BudgetScope.swift Sources/Access/Budgets/BudgetLimit.swift Sources/Access/JWT/CompactJWS.swift Sources/Access/JWT/JWTFailure.swift Sources/Access/JWT/JWTVerifier.swift Sources/Access/JWT/JWTPolicy.swift Sources/Access/JWT/JWTCache.swift Sources/Access/JWT/JWKSet.swift Sources/Access/JWT/JWTKey.swift Sources/Access/JWT/JWTAlgorithm.swift Sources/Access/Base64URL.swift Sources/Access/Caller.swift Sources/Access/Plan.swift Sources/Access/PlanCatalog.swift Sources/Access/PlanConfigError.swift"
        )
        includes=(-I Sources/CCrypto)
        links=(-lcrypto)
        options=(-max_len=12288)
        ;;
    AppAttestCBOR)
        # App Attest's strict CBOR reader and the authenticator-data parser.
        modules=("Access:Sources/Access/AppAttest/CBOR.swift Sources/Access/AppAttest/AuthenticatorData.swift")
        # Room for an attestation object (the real one is 5,274 bytes) and then some.
        options=(-max_len=8192)
        ;;
    AndroidKeyDescription)
        # The Android Key Attestation extension's DER walker and KeyDescription reader.
        modules=("Access:Sources/Access/AndroidAttest/AttestationDER.swift Sources/Access/AndroidAttest/KeyDescription.swift")
        # A certificate's extension is far smaller than a certificate (16 KiB at most).
        options=(-max_len=16384)
        ;;
    HTTPResponse)
        # What a plain-http upstream answers, read by the client's own connections.
        modules=("HTTPClient:Sources/HTTPClient/ResponseReader.swift Sources/HTTPClient/ResponseSink.swift Sources/HTTPClient/ResponseFields.swift Sources/HTTPClient/HTTPClientError.swift Sources/HTTPClient/HTTPClientRequest.swift")
        options=(-max_len=8192)
        ;;
    *) echo "unknown fuzz target: $target" >&2; exit 2 ;;
esac

build="Fuzz/.build/$target"
binary="Fuzz/.build/${target}Fuzz"
work="Fuzz/corpus-work/$target"
artifacts="Fuzz/artifacts/$target"
log="Fuzz/.build/$target.log"
summary="Fuzz/.build/$target.summary"
rm -rf "$build"
mkdir -p "$build" "$work" "$artifacts"
rm -f "$summary" "$log" "$log".*

echo "building $binary"
if [ ${#modules[@]} -eq 0 ]; then
    swiftc -O -sanitize=fuzzer,address -parse-as-library -use-ld=lld -package-name TextGateway \
        -module-name "${target}Fuzz" \
        "${inline[@]}" "Fuzz/${target}Fuzz/main.swift" Fuzz/Require.swift \
        -o "$binary"
else
    objects=()
    for module in "${modules[@]}"; do
        name=${module%%:*}
        # shellcheck disable=SC2086 # the file list is a glob, expanded here
        swiftc -O -sanitize=fuzzer,address -parse-as-library -enable-testing -wmo -package-name TextGateway \
            -enable-upcoming-feature InternalImportsByDefault \
            -module-name "$name" -I "$build" "${includes[@]}" \
            -emit-module -emit-module-path "$build/$name.swiftmodule" \
            -c -o "$build/$name.o" ${module#*:}
        objects+=("$build/$name.o")
    done
    swiftc -O -sanitize=address -parse-as-library -wmo -package-name TextGateway -module-name "${target}Fuzz" -I "$build" "${includes[@]}" \
        -c -o "$build/main.o" "Fuzz/${target}Fuzz/main.swift" Fuzz/Require.swift
    swiftc -sanitize=fuzzer,address -use-ld=lld "${objects[@]}" "$build/main.o" "${links[@]}" -o "$binary"
fi

for seed in "Fuzz/corpus/$target"/*; do
    [ -e "$work/$(basename "$seed")" ] || cp "$seed" "$work/"
done

[ -f "Fuzz/$target.dict" ] && options+=("-dict=Fuzz/$target.dict")
fuzzer=("$binary" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" -print_final_stats=1
    "${options[@]}" "$@" "$work")

start=$(date +%s%N)
status=0
if [ -z "$runs" ]; then
    echo "fuzzing $target for ${seconds}s"
    SWIFT_BACKTRACE=enable=no "${fuzzer[@]}" -max_total_time="$seconds" >"$log" 2>&1 || status=$?
    logs=("$log")
    tail -n 30 "$log"
    echo "----"
else
    each=$(( (runs + jobs - 1) / jobs ))
    echo "fuzzing $target for $runs runs: $jobs fuzzer(s) of $each runs"
    pids=()
    logs=()
    for job in $(seq 1 "$jobs"); do
        SWIFT_BACKTRACE=enable=no "${fuzzer[@]}" -runs="$each" >"$log.$job" 2>&1 &
        pids+=($!)
        logs+=("$log.$job")
    done
    for index in "${!pids[@]}"; do
        if ! wait "${pids[$index]}"; then
            status=1
            echo "fuzzer ${logs[$index]} failed:" >&2
            tail -n 40 "${logs[$index]}" >&2
        fi
    done
fi
elapsed_ns=$(( $(date +%s%N) - start ))

# libFuzzer's own count of executions, corpus loading included, summed over the fuzzers
# (its final statistics are printed after a crash too).
total=0
for file in "${logs[@]}"; do
    if ! grep -qE "^Done [0-9]+ runs" "$file"; then
        echo "no final 'Done N runs' line in $file" >&2
        status=1
    fi
    executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$file")
    echo "$file: ${executed:-no} executions"
    total=$(( total + ${executed:-0} ))
done
if [ -n "$runs" ] && [ "$status" -eq 0 ] && [ "$total" -lt "$runs" ]; then
    echo "only $total of $runs runs" >&2
    status=1
fi

seconds_taken=$(( (elapsed_ns + 500000000) / 1000000000 ))
rate=$(( total * 1000000000 / (elapsed_ns > 0 ? elapsed_ns : 1) ))
if [ "$status" -ne 0 ]; then
    echo "$target: FAILED after $total runs in $seconds_taken s; inputs in $artifacts/" | tee "$summary" >&2
else
    echo "$target: $total runs in $seconds_taken s ($rate exec/s), no crash" | tee "$summary"
fi
exit "$status"
