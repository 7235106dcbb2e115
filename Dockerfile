# syntax=docker/dockerfile:1
# Images of policing, the operator and aaa-loadgen for users with a Docker engine (untested here: the
# tested path is `make images`, which needs no engine; docs/helm.md). The result matches it:
# a static binary in /usr/local/bin on a distroless base, running as 65532:65532.
#
#   docker build --target policing         -t ghcr.io/openaaa/policing:dev .
#   docker build --target openaaa-operator -t ghcr.io/openaaa/openaaa-operator:dev .
#   docker build --target aaa-loadgen      -t ghcr.io/openaaa/aaa-loadgen:dev .
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags "-s -w -X github.com/openaaa/openaaa/internal/version.Version=${VERSION}" -o /out/policing ./services/policing \
 && go build -trimpath -ldflags "-s -w -X github.com/openaaa/openaaa/internal/version.Version=${VERSION}" -o /out/openaaa-operator . \
 && go build -trimpath -ldflags "-s -w -X github.com/openaaa/openaaa/internal/version.Version=${VERSION}" -o /out/aaa-loadgen ./services/loadgen

FROM gcr.io/distroless/static-debian12:nonroot AS openaaa-operator
COPY --from=build /out/openaaa-operator /usr/local/bin/openaaa-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/openaaa-operator"]

FROM gcr.io/distroless/static-debian12:nonroot AS policing
COPY --from=build /out/policing /usr/local/bin/policing
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/policing"]
CMD ["serve"]

FROM gcr.io/distroless/static-debian12:nonroot AS aaa-loadgen
COPY --from=build /out/aaa-loadgen /usr/local/bin/aaa-loadgen
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/aaa-loadgen"]
