# syntax=docker/dockerfile:1
# lakewap: multi-stage build. DuckDB is linked in through cgo, so the build
# stage needs gcc/g++ (the golang image has them) and the runtime needs glibc
# and libstdc++ (Debian slim), not a static/distroless image.
#
#   docker build -t lakewap .
#   docker run --rm -v $PWD/deploy/lakewap.yaml:/etc/lakewap/lakewap.yaml:ro lakewap validate /etc/lakewap/lakewap.yaml

#
# The base images are build args whose defaults are the official images;
# scripts/containers.sh passes its own where no registry can be reached:
#   --build-arg BUILD_IMAGE=...   (a Debian bookworm with gcc and Go)
#   --build-arg RUNTIME_IMAGE=... (a Debian bookworm)
# GOPROXY, when given, is where `go mod download` gets the modules.

ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm
ARG BUILD_IMAGE=golang:${GO_VERSION}-${DEBIAN_RELEASE}
ARG RUNTIME_IMAGE=debian:${DEBIAN_RELEASE}-slim

FROM ${BUILD_IMAGE} AS build
ARG GOPROXY
# The version lakewap reports (lakewap version, lakewap_build_info); the
# build context has no .git, so there is no VCS revision to take it from.
ARG VERSION
WORKDIR /src
ENV CGO_ENABLED=1 GOFLAGS=-trimpath
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags="-s -w -X github.com/lakewap/lakewap/internal/buildinfo.version=${VERSION}" -o /out/lakewap ./cmd/lakewap \
 && /out/lakewap version

FROM ${RUNTIME_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata libstdc++6 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 lakewap \
 && useradd --system --uid 10001 --gid lakewap --home-dir /var/lib/lakewap --create-home --shell /usr/sbin/nologin lakewap \
 && mkdir -p /etc/lakewap /var/lib/lakewap/audit /var/lib/lakewap/cache \
 && chown -R lakewap:lakewap /var/lib/lakewap
COPY --from=build /out/lakewap /usr/local/bin/lakewap
USER 10001:10001
WORKDIR /var/lib/lakewap
# /metrics, /healthz, /readyz (http.listen in the config).
EXPOSE 9090
VOLUME ["/var/lib/lakewap"]
# Healthy once /readyz answers 200: lakeFS answers and every assigned
# partition is restored (lakewap ready reads http.listen from the config).
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/lakewap", "ready", "-config", "/etc/lakewap/lakewap.yaml"]
# SIGTERM starts a graceful shutdown: in-flight steps finish or are handed back
# within runner.shutdown_grace; give `docker stop -t` more than that.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/lakewap"]
CMD ["run", "-config", "/etc/lakewap/lakewap.yaml"]
