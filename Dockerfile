# syntax=docker/dockerfile:1
# TextGateway container image.
#
#   docker build -t text-gateway .
#   docker run --rm -p 8080:8080 -v textgateway-data:/app/data \
#       -e DARVAREH_API_KEY=... -e DARVAREH_MODEL_ID=... text-gateway
#
# The store (usage, history, quotas, caller tokens) is the SQLite file
# /app/data/textgateway.sqlite: keep /app/data on a volume, or it dies with the container.
#
# Settings come from the environment (see .env.example); no .env file is copied into the image.

# ---- build: the Swift toolchain (Debian 12) compiles the release binary ----------------------
FROM swift:6.3-bookworm AS build

# libcurl, SQLite, libcrypto (OpenSSL), hiredis and libpq headers for the CCurl, CSQLite,
# CCrypto, CRedis and CPostgres system library targets, found through pkg-config: the build
# packages of scripts/packages, installed by the same script a developer's machine uses.
COPY scripts/setup.sh scripts/packages /src/scripts/
RUN /src/scripts/setup.sh build && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# The package has no dependencies, so nothing to resolve. Every folder that Package.swift
# names must exist for SwiftPM to load the manifest: Sources/, the benchmark executables under
# Benchmarks/ and the test targets under Tests/ (none of them is built here).
COPY Package.swift ./
COPY Sources ./Sources
COPY Benchmarks ./Benchmarks
COPY Tests ./Tests

# What `make release` builds: the gateway with the Swift runtime linked in statically, so the
# runtime image needs only Debian's libcurl, libsqlite3, libssl3 (libcrypto), libhiredis, libpq,
# libc and libstdc++.
RUN swift build -c release --static-swift-stdlib --product text-gateway \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/text-gateway" /out/text-gateway

# ---- runtime: Debian 12 slim, its libcurl, libsqlite3, libssl3, libhiredis, libpq, CA certificates, the binary
FROM debian:bookworm-slim

# libcurl4 brings nghttp2 and the rest of what libcurl.so.4 links; ca-certificates lets it
# verify the upstream's HTTPS certificate; libsqlite3-0 is the store; libssl3 is libcrypto, for
# hashing tokens and verifying signatures (libcurl needs it too, but the gateway links it
# itself, so it is named here); libhiredis0.14 and libpq5 reach a shared Redis and Postgres
# (REDIS_URL, DATABASE_URL=postgres://…). libc6, libgcc-s1 and libstdc++6 are in the base.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4 libsqlite3-0 libssl3 libhiredis0.14 libpq5 ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# A fixed, unprivileged user: the gateway needs no root (it listens on 8080, not below 1024).
RUN groupadd --gid 10001 textgateway \
    && useradd --uid 10001 --gid textgateway --no-log-init --no-create-home --home-dir /app \
        --shell /usr/sbin/nologin textgateway \
    && install -d -o textgateway -g textgateway -m 0750 /app \
    && install -d -o textgateway -g textgateway -m 0700 /app/data

COPY --from=build /out/text-gateway /usr/local/bin/text-gateway

# The working directory is where .env / .env.<env> would be read from (mount one there, or
# better pass variables with -e / --env-file).
WORKDIR /app
ENV HOST=0.0.0.0 PORT=8080 DATABASE_URL=sqlite:/app/data/textgateway.sqlite
# A named volume mounted here starts with this directory's owner (the gateway's user).
VOLUME ["/app/data"]
EXPOSE 8080

# `healthcheck` asks GET /api/health on 127.0.0.1:$PORT and exits 0 on 200.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/text-gateway", "healthcheck"]

# SIGTERM drains: stop accepting, let requests in flight finish for up to SHUTDOWN_GRACE_SECONDS
# (default 10), exit 0. Give `docker stop -t` / stop_grace_period / terminationGracePeriodSeconds
# a few seconds more than that, or the runtime's SIGKILL cuts the drain short.
STOPSIGNAL SIGTERM
USER textgateway
ENTRYPOINT ["/usr/local/bin/text-gateway"]
CMD ["serve", "--env", "production"]
