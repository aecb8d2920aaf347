# syntax=docker/dockerfile:1
# lakewap: multi-stage build. DuckDB is linked in through cgo, so the build
# stage needs gcc/g++ (the golang image has them) and the runtime needs glibc
# and libstdc++ (Debian slim), not a static/distroless image.
#
#   docker build -t lakewap .
#   docker run --rm -v $PWD/deploy/lakewap.yaml:/etc/lakewap/lakewap.yaml:ro lakewap validate /etc/lakewap/lakewap.yaml

ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
ENV CGO_ENABLED=1 GOFLAGS=-trimpath
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags="-s -w" -o /out/lakewap ./cmd/lakewap \
 && /out/lakewap version

FROM debian:${DEBIAN_RELEASE}-slim
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
# SIGTERM starts a graceful shutdown: in-flight steps finish or are handed back.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/lakewap"]
CMD ["run", "-config", "/etc/lakewap/lakewap.yaml"]
