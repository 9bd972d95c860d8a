# TextGateway — build, test and measure. `make help` lists the targets.
SWIFT        ?= swift
SWIFT_FLAGS  ?= -Xswiftc -warnings-as-errors
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= 10000000
FUZZ_JOBS    ?= 1
MOCK_PORT    ?= 9090

.PHONY: help setup build test lint image-check bare-check real-upstream-check test-openai openapi-check import-check console-check traces-check release run demo bench clean fuzz fuzz-long bench-gateway bench-spread bench-scale bench-server bench-client bench-https bench-instructions bench-frames profile allocations allocations-check bench-store bench-crypto bench-jwt bench-devices bench-idempotency bench-instances bench-jobs bench-admin mock drills instances-check nginx-check stress

help:
	@echo "make setup         install the Debian packages the build and the tests need, when missing (scripts/setup.sh test)"
	@echo "make build         debug build of every target"
	@echo "make test          build and run every test (scripts/test.sh: what CI runs)"
	@echo "make stress        the Swift suite STRESS_ROUNDS times (default 10) with every core busy (stress-ng): a test that fails once is a defect"
	@echo "make lint          swift format lint --strict, and no .swift line longer than 120 characters (scripts/lint.sh)"
	@echo "make image-check   build the Dockerfile (podman, or docker) and run the container as a deployment does: health, an answer, HEALTHCHECK, user, volume, tokens, restart, stop"
	@echo "make bare-check    the README's Quick start demo command, as written, in the bare swift:6.3-bookworm image"
	@echo "make real-upstream-check  the gateway in front of llama.cpp's llama-server (SmolLM2-135M, built once into LLAMA_DIR): tasks, streams, /v1, json, context overflow, hang-up, a job, eval"
	@echo "make test-openai   the official openai Python package against /v1 (installs it in .build/venv)"
	@echo "make import-check  Package.swift's dependencies within docs/architecture.md's Targets table, every import within Package.swift (after the check's self-test)"
	@echo "make traces-check  traces into a real collector (Arize Phoenix, installed once outside the clone): a plain request, a stream, a /v1 fallback, a refused request and a job, their spans read back and checked"
	@echo "make console-check the operator console (/admin) in headless Chromium against the gateway and mock: login, totals, languages, tokens made and revoked from the page, CSV export, screenshots in .build/console-artefacts (installs chromium when missing)"
	@echo "make openapi-check docs/openapi.yaml against a running gateway and mock, open and with tokens required: schemathesis (installs it in .build/openapi-venv), every check"
	@echo "make release       optimized, statically linked text-gateway (what the Dockerfile builds)"
	@echo "make run           run the gateway from the working directory's .env"
	@echo "make demo          mock-upstream + gateway wired together, with a curl for each task"
	@echo "make bench         the benchmark suite: bench-gateway (wrk: gateway, nginx pass-through, mock direct), bench-store, bench-crypto, bench-jwt, bench-devices, bench-idempotency, bench-instances, bench-jobs, bench-admin, bench-spread, then bench-scale"
	@echo "make bench-gateway latency and requests/s at 1/16/64/256 connections (needs wrk, nginx-light)"
	@echo "make bench-store   the store's cost: gateways with the store off, fast and strict, interleaved; the ledger writer's rows/s and bytes per row (needs wrk)"
	@echo "make bench-crypto  SHA-256 (libcrypto and the pure Swift it replaced), HMAC, RS256 and ES256 verification: ns per operation"
	@echo "make bench-instances  what sharing costs one instance: /api/process with limits in memory, in Redis, and in Redis with the store in Postgres, interleaved (needs wrk, redis-server, postgresql)"
	@echo "make bench-idempotency  Idempotency-Key's cost: /api/process without the field and with a fresh key per request, beside BEFORE_BIN's build when set, interleaved (needs wrk)"
	@echo "make bench-devices the devices' cost: one App Attest and one Android registration and session (µs), and /api/process with device-session callers beside store-token callers, interleaved (needs wrk)"
	@echo "make bench-jwt     sign-in's cost: one JWT verification (HS256, RS256, ES256; checked and cached), and /api/process with JWT callers beside gateway-token callers, interleaved (needs wrk)"
	@echo "make bench-spread  connections opened at once on an idle server, then CPU-bound: one loop against one per core (needs wrk)"
	@echo "make fuzz          fuzz every target (request parser, JSON, .env, SSE, /api/process body, JWT, App Attest CBOR, Android Key Attestation DER, upstream HTTP/1.x responses), FUZZ_SECONDS each (default 60)"
	@echo "make fuzz-long     fuzz every target for FUZZ_RUNS executions (default 10,000,000), over FUZZ_JOBS processes each"
	@echo "make bench-server  wrk benchmark of the HTTP core next to nginx (needs wrk, nginx)"
	@echo "make bench-client  upstream client against mock-upstream: req/s, and RSS of 5,000 calls in flight"
	@echo "make bench-admin   the operator's console on 10,000,000 ledger rows (SQLite, then Postgres): each API call the page makes for 30 days, median and slowest; the writer with the roll-ups on and off (needs curl, postgresql)"
	@echo "make bench-jobs    long texts as jobs against a 300 ms upstream: one 200,000-character summary (wall time, upstream calls), then 20 at once (RSS while they run)"
	@echo "make bench-https   a cold client's 1,000 calls over HTTPS and HTTP/2 (nginx ssl http2, 1 s mock): wall time, connections"
	@echo "make bench-frames  gdb: the async frames one POST /api/process takes from its task's allocator (task allocations, slabs, the deepest stack; needs gdb)"
	@echo "make bench-instructions  callgrind: the gateway's instructions per POST /api/process, by function (needs valgrind; TEXT_REPEAT=1..38 for longer texts)"
	@echo "make profile       perf: the release gateway as shipped (store, access log) under wrk at 64 connections, drawn as a flame graph (flamegraph.svg) with the top functions (needs perf, wrk)"
	@echo "make allocations   heap allocations a request (plain, stream, /v1), counted by an LD_PRELOAD counter (needs cc); allocations-check fails when one grew by more than 10 % over Benchmarks/allocations.json"
	@echo "make bench-scale   the gateway at scale beside nginx and the mock direct: idle RSS and start time, 10,000 in flight, 2,000 streams (SCALE_ROUNDS=3, medians), soak (SOAK_SECONDS=600)"
	@echo "make mock          run mock-upstream on 127.0.0.1:$(MOCK_PORT)"
	@echo "make instances-check  deploy/compose.yaml's arrangement from Debian's packages: docs/nginx.conf, two gateways, redis-server, Postgres; shared limits, history and cache, Redis away, an instance down, nginx's own errors as JSON (needs nginx-light, redis-server, postgresql)"
	@echo "make drills        fault drills (drills/drills.sh, a file per drill): upstream killed/slow/garbage, mass disconnects, SIGTERM under load, 1 MiB bodies, kill -9 with a strict store, failover, jobs under load, keyed retries, budgets over three instances on one Redis"
	@echo "make clean         remove build products"

setup:
	scripts/setup.sh test

build:
	$(SWIFT) build $(SWIFT_FLAGS)

test:
	scripts/test.sh

lint:
	scripts/lint.sh

STRESS_ROUNDS ?= 10
stress:
	scripts/stress.sh $(STRESS_ROUNDS)

release:
	$(SWIFT) build -c release --static-swift-stdlib --product text-gateway
	@echo "built $$($(SWIFT) build -c release --show-bin-path)/text-gateway"

run:
	$(SWIFT) run -c release text-gateway serve

demo:
	scripts/demo.sh

bench: bench-gateway bench-store bench-crypto bench-jwt bench-devices bench-idempotency bench-instances bench-jobs bench-admin bench-spread bench-scale

bench-gateway:
	Benchmarks/bench-gateway.sh

bench-admin:
	Benchmarks/bench-admin.sh

bench-spread:
	Benchmarks/bench-spread.sh

fuzz:
	Fuzz/run.sh RequestParser $(FUZZ_SECONDS)
	Fuzz/run.sh JSONValue $(FUZZ_SECONDS)
	Fuzz/run.sh DotEnv $(FUZZ_SECONDS)
	Fuzz/run.sh SSE $(FUZZ_SECONDS)
	Fuzz/run.sh ProcessBody $(FUZZ_SECONDS)
	Fuzz/run.sh JWT $(FUZZ_SECONDS)
	Fuzz/run.sh AppAttestCBOR $(FUZZ_SECONDS)
	Fuzz/run.sh AndroidKeyDescription $(FUZZ_SECONDS)
	Fuzz/run.sh HTTPResponse $(FUZZ_SECONDS)

# The fastest targets first; each line is "<Target>: N runs in S s (R exec/s), no crash".
fuzz-long:
	Fuzz/run.sh JSONValue runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh ProcessBody runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh JWT runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh DotEnv runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh SSE runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh RequestParser runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh AppAttestCBOR runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh AndroidKeyDescription runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	Fuzz/run.sh HTTPResponse runs=$(FUZZ_RUNS) jobs=$(FUZZ_JOBS)
	@echo "----"
	@cat Fuzz/.build/JSONValue.summary Fuzz/.build/ProcessBody.summary Fuzz/.build/JWT.summary Fuzz/.build/DotEnv.summary \
		Fuzz/.build/SSE.summary Fuzz/.build/RequestParser.summary Fuzz/.build/AppAttestCBOR.summary \
		Fuzz/.build/AndroidKeyDescription.summary Fuzz/.build/HTTPResponse.summary

bench-server:
	Benchmarks/bench-server.sh

bench-client:
	Benchmarks/bench-client.sh

bench-jobs:
	Benchmarks/bench-jobs.sh

bench-https:
	Benchmarks/bench-https-h2.sh 1000 1000

bench-scale:
	Benchmarks/bench-scale.sh

bench-store:
	Benchmarks/bench-store.sh

bench-crypto:
	Benchmarks/bench-crypto.sh

bench-jwt:
	Benchmarks/bench-jwt.sh

bench-devices:
	Benchmarks/bench-devices.sh

bench-idempotency:
	Benchmarks/bench-idempotency.sh

bench-instances:
	Benchmarks/bench-instances.sh

bench-instructions:
	Benchmarks/instructions.sh

bench-frames:
	Benchmarks/task-frames.sh

profile:
	Benchmarks/profile.sh

allocations:
	Benchmarks/allocations.sh

allocations-check:
	Benchmarks/allocations.sh --check

mock:
	$(SWIFT) run -c release mock-upstream --port $(MOCK_PORT)

drills:
	drills/drills.sh

instances-check nginx-check:
	scripts/instances-check.sh

image-check:
	scripts/image-check.sh

bare-check:
	scripts/bare-check.sh

real-upstream-check:
	scripts/real-upstream-check.sh

clean:
	rm -rf .build Fuzz/.build Fuzz/corpus-work

# The official openai Python package against the gateway's /v1 (a venv inside .build).
VENV := .build/venv
test-openai:
	$(SWIFT) build $(SWIFT_FLAGS) --product text-gateway
	$(SWIFT) build $(SWIFT_FLAGS) --product mock-upstream
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check openai
	$(VENV)/bin/python Tests/python/openai_sdk_check.py

# docs/openapi.yaml against the running gateway: schemathesis (a venv inside .build).
openapi-check:
	scripts/openapi-check.sh

# The self-test first: a check that passes everything proves nothing.
import-check:
	scripts/import-check.sh --self-test
	scripts/import-check.sh

# The operator console in headless Chromium over the DevTools protocol (Python standard library).
console-check:
	scripts/console-check.sh

traces-check:
	scripts/traces-check.sh
