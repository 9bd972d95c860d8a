# TextGateway — build, test and measure. `make help` lists the targets.
SWIFT        ?= swift
SWIFT_FLAGS  ?= -Xswiftc -warnings-as-errors
FUZZ_SECONDS ?= 60
MOCK_PORT    ?= 9090

.PHONY: help build test test-openai release run demo bench clean fuzz bench-server bench-client mock

help:
	@echo "make build         debug build of every target"
	@echo "make test          build and run every test (what CI runs)"
	@echo "make test-openai   the official openai Python package against /v1 (installs it in .build/venv)"
	@echo "make release       optimized, statically linked text-gateway (what the Dockerfile builds)"
	@echo "make run           run the gateway from the working directory's .env"
	@echo "make demo          mock-upstream + gateway wired together, with a curl for each task"
	@echo "make bench         wrk: POST /api/process through the gateway vs straight to the mock (needs wrk)"
	@echo "make fuzz          fuzz the HTTP request parser and the JSON parser, FUZZ_SECONDS each (default 60)"
	@echo "make bench-server  wrk benchmark of the HTTP core next to nginx (needs wrk, nginx)"
	@echo "make bench-client  upstream client against mock-upstream: req/s, and RSS of 5,000 calls in flight"
	@echo "make mock          run mock-upstream on 127.0.0.1:$(MOCK_PORT)"
	@echo "make clean         remove build products"

build:
	$(SWIFT) build $(SWIFT_FLAGS)

test:
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build

release:
	$(SWIFT) build -c release --static-swift-stdlib --product text-gateway
	@echo "built $$($(SWIFT) build -c release --show-bin-path)/text-gateway"

run:
	$(SWIFT) run -c release text-gateway serve

demo:
	scripts/demo.sh

bench:
	Benchmarks/bench-gateway.sh

fuzz:
	Fuzz/run.sh RequestParser $(FUZZ_SECONDS)
	Fuzz/run.sh JSONValue $(FUZZ_SECONDS)

bench-server:
	Benchmarks/bench-server.sh

bench-client:
	Benchmarks/bench-client.sh

mock:
	$(SWIFT) run -c release mock-upstream --port $(MOCK_PORT)

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
