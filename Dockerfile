# syntax=docker/dockerfile:1
# gpupool's images, one target each (make image builds all three; docs/deployment.md):
#   server       ingest, analyzer, scheduler, reports, alerts, console, migrate: against an
#                external ClickHouse; distroless, no shell, no chDB
#   server-chdb  server plus libchdb.so (the embedded ClickHouse) for demo, sql and a
#                single-machine store
#   collector    the GPU node's collector and agent on NVIDIA's DCGM image (libdcgm);
#                NVML comes with the driver through the NVIDIA container runtime
# Every image runs as uid 65532 (the collector's node agent is run as root by the Helm
# chart only when enabled). Base images are pinned; bump them deliberately.

ARG GO_IMAGE=golang:1.26.8-bookworm
ARG DCGM_IMAGE=nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04

# The binary for the Debian-based images. go-nvml and go-dcgm open their libraries
# with dlopen through cgo, so the binary links glibc dynamically.
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ENV CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gpupool ./cmd/gpupool

# The same binary built against the DCGM image's (older) glibc, for the collector.
FROM ${DCGM_IMAGE} AS build-collector
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ENV CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gpupool ./cmd/gpupool

# libchdb.so from its npm package, the same version make deps fetches.
FROM node:22.12.0-bookworm-slim AS chdb
ARG CHDB_VERSION=26.7.3-stable.1
WORKDIR /chdb
RUN npm pack --silent "@chdb/lib-linux-x64-gnu@${CHDB_VERSION}" \
    && tar xzf "chdb-lib-linux-x64-gnu-${CHDB_VERSION}.tgz" package/libchdb.so \
    && mv package/libchdb.so /chdb/libchdb.so \
    && rm -rf package ./*.tgz

FROM gcr.io/distroless/cc-debian12:nonroot AS server
COPY --from=build --chown=65532:65532 /out/gpupool /usr/local/bin/gpupool
USER 65532:65532
# No HEALTHCHECK: distroless has no shell or HTTP client to run one, and the
# orchestrator probes /healthz and /readyz on the --metrics port itself (the Helm
# chart's liveness and readiness probes; docs/metrics.md).
HEALTHCHECK NONE
ENTRYPOINT ["/usr/local/bin/gpupool"]

FROM server AS server-chdb
COPY --from=chdb --chown=65532:65532 /chdb/libchdb.so /usr/local/lib/gpupool/libchdb.so
ENV GPUPOOL_CHDB_LIB=/usr/local/lib/gpupool/libchdb.so
USER 65532:65532
# No HEALTHCHECK: as in server.
HEALTHCHECK NONE
ENTRYPOINT ["/usr/local/bin/gpupool"]

FROM ${DCGM_IMAGE} AS collector
COPY --from=build-collector --chown=65532:65532 /out/gpupool /usr/local/bin/gpupool
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
USER 65532:65532
# No HEALTHCHECK: the image has no HTTP client; the DaemonSet probes /healthz and
# /readyz on the collector's --metrics port.
HEALTHCHECK NONE
ENTRYPOINT ["/usr/local/bin/gpupool"]
