# syntax=docker/dockerfile:1
# The tidal image: one binary (`tidal run` for the controller, `tidal webhook` for the admission webhook)
# on a distroless base, running as an unprivileged user. Not built by CI (no Docker there).
#
#   docker build -t ghcr.io/tidal-dev/tidal:0.1.0 .
#
# Linked against glibc, not built static on musl: on the same real API server at 5,000 nodes / 150,000
# pods, a musl build planned 1.75x slower (tidal_plan_duration_seconds mean 49–53 ms against 28–30 ms)
# and synced twice as slowly (7.2–7.7 s against 3.6–4.1 s); musl's allocator and its plain memcpy and
# memcmp, which the cache and the planner lean on (docs/performance.md, "What the figures depend on").
# The allocator is jemalloc, compiled into the binary (tikv-jemallocator; its build needs make and cc,
# which the rust image has).
ARG RUST_VERSION=1.95

# Debian 12 (bookworm) on both sides: the binary needs no glibc newer than the runtime image has.
FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin tidal \
    && cp target/release/tidal /tidal \
    && strip /tidal

# glibc and libgcc_s, nothing else (no shell). The time-zone database is compiled into the binary (jiff
# tzdb-bundle-always).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /tidal /usr/local/bin/tidal
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tidal"]
CMD ["--help"]
