# The controller-manager image: `make image IMG=<registry>/controller-manager:<tag>`.
# A static binary (no cgo) on distroless/static, running as the nonroot user
# 65532 (the Deployment's restricted security context requires non-root and
# runs it on a read-only root filesystem).

# Build stage: the Go version of go.mod.
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, cached while only the sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
COPY pkg/ pkg/
# TARGETOS/TARGETARCH are set by `docker buildx build --platform ...`.
ARG TARGETOS=linux
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/controller-manager ./cmd/controller-manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/controller-manager /controller-manager
USER 65532:65532
ENTRYPOINT ["/controller-manager"]
