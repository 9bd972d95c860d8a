# TextGateway — build, test and measure. `make help` lists the targets.
SWIFT        ?= swift
SWIFT_FLAGS  ?= -Xswiftc -warnings-as-errors
FUZZ_SECONDS ?= 60
MOCK_PORT    ?= 9090

.PHONY: help build test release clean fuzz bench-server bench-client mock

help:
	@echo "make build         debug build of every target"
	@echo "make test          build and run every test (what CI runs)"
	@echo "make release       optimized build"
	@echo "make fuzz          fuzz the HTTP request parser for FUZZ_SECONDS (default 60)"
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
	$(SWIFT) build -c release $(SWIFT_FLAGS)

fuzz:
	Fuzz/run.sh RequestParser $(FUZZ_SECONDS)

bench-server:
	Benchmarks/bench-server.sh

bench-client:
	Benchmarks/bench-client.sh

mock:
	$(SWIFT) run -c release mock-upstream --port $(MOCK_PORT)

clean:
	rm -rf .build Fuzz/.build Fuzz/corpus-work
