# syntax=docker/dockerfile:1
# The tidal image: one static binary (`tidal run` for the controller, `tidal webhook` for the admission
# webhook) on a distroless base, running as an unprivileged user. Not built by CI (no Docker there).
#
#   docker build -t ghcr.io/tidal-dev/tidal:0.1.0 .
ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-alpine AS build
# musl-dev: ring's C and assembly parts. On Alpine the Rust target is musl and links statically.
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin tidal \
    && cp target/release/tidal /tidal \
    && strip /tidal

# Static: no libc needed. The time-zone database is compiled into the binary (jiff tzdb-bundle-always).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /tidal /usr/local/bin/tidal
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tidal"]
CMD ["--help"]
