# syntax=docker/dockerfile:1
#
# verdictbot container image: `make docker` (needs a Docker engine), or
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#                --build-arg COMMIT=$(git rev-parse --short HEAD) \
#                --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t verdictbot .
#
# The release's image is built by ko instead (.goreleaser.yaml, kos): the
# same static binary on the same base, with no Dockerfile; this file is
# for `make docker` and deploy/compose.yaml.
#
# Two stages: a Go toolchain builds one static binary, and the final image
# holds that binary and nothing else to run it with (no shell, no package
# manager), as user 65532. Settings come from the environment (README,
# "Settings"); state lives in the /data volume. docs/operations.md covers
# running it.

# 1.26 follows the newest 1.26.x patch release (go.mod asks for 1.26.8 or
# later); pin a patch version, or a digest, for byte-for-byte rebuilds.
ARG GO_VERSION=1.26

# ---- build ----
# Runs on the build machine's platform and cross-compiles for the target
# (docker buildx --platform linux/amd64,linux/arm64), which needs no emulation
# because the binary has no cgo.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src

# Modules first, into a cache the build step shares: this step is skipped
# while go.mod and go.sum do not change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY . .
# The same flags as the Makefile's `build` target (LDFLAGS there): static,
# reproducible paths, version and commit stamped into main. .git is not in
# the build context (.dockerignore), hence the build args and -buildvcs=false.
# An empty one prints as "unknown" (cmd/verdictbot/buildinfo.go).
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
# Set by BuildKit from --platform; empty (the build machine's) otherwise.
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/usr/local/bin/verdictbot ./cmd/verdictbot
# The data directory must exist in the image, owned by the runtime user: a
# fresh Docker volume mounted on /data takes its owner from it.
RUN mkdir -p /out/data

# ---- run ----
# distroless static: CA certificates (the services and Slack are reached over
# TLS), tzdata, and /etc/passwd with the user nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot

ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=
LABEL org.opencontainers.image.title="verdictbot" \
      org.opencontainers.image.description="Slack app that scans shared links and files and answers with a verdict card" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${DATE}" \
      org.opencontainers.image.source="https://github.com/verdictbot/verdictbot"

COPY --from=build /out/usr/local/bin/verdictbot /usr/local/bin/verdictbot
COPY --from=build --chown=65532:65532 /out/data /data

# Numeric, so that Kubernetes' runAsNonRoot can check it without /etc/passwd.
USER 65532:65532

# VERDICTBOT_HTTP_ADDR defaults to 127.0.0.1:8080 outside containers; in one,
# /healthz, /readyz and /metrics must be reachable from outside the
# container, so listen on every interface.
ENV VERDICTBOT_DATA_DIR=/data \
    VERDICTBOT_HTTP_ADDR=0.0.0.0:8080
# verdictbot.db (bbolt, single writer) and tmp/ (files being sent to the
# sandbox). Back it up as docs/operations.md says. With
# VERDICTBOT_DATABASE_URL the state is in PostgreSQL and /data holds tmp/
# only (deploy/compose.yaml mounts a tmpfs there).
VOLUME ["/data"]
EXPOSE 8080

# `verdictbot healthcheck` GETs /healthz on VERDICTBOT_HTTP_ADDR (0.0.0.0 is
# probed as 127.0.0.1) and exits 0 or 1: the image has no shell or curl.
# Start-up opens the store (and migrates it, after a backup copy) before the
# server listens, hence the start period. Kubernetes ignores HEALTHCHECK and
# uses the probes in deploy/kubernetes/deployment.yaml.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/verdictbot", "healthcheck"]

# SIGTERM (docker stop) stops intake and exits within 10 s: docker stop's
# default 10 s grace is tight, so use `docker stop -t 15` (or stop_grace_period
# in compose). A second signal exits at once.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/verdictbot"]
CMD ["run"]
