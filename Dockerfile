# The controller-manager image: the static binary and the CA certificates
# (TLS to Keystone and Neutron) on an empty base, run as the non-root user
# 65532 (the Deployment's restricted security context requires non-root and
# runs it on a read-only root filesystem). Nothing else: no shell, no libc.
#
# The build context holds, per platform, what Go cross-compiles:
#   <os>_<arch>/controller-manager   CGO_ENABLED=0 GOOS=<os> GOARCH=<arch> go build ./cmd/controller-manager
#   ca-certificates.crt              the CA bundle of Debian's ca-certificates
# TARGETOS and TARGETARCH (set by buildah and docker buildx for each
# --platform) pick the binary; nothing runs at build time, so an image for
# another architecture needs no emulation. `make image` (one platform) and
# `make release` (linux/amd64 and linux/arm64) fill the context and build
# this file with buildah (hack/build-image.sh) into an OCI archive;
# `docker buildx build --platform linux/amd64,linux/arm64 -f Dockerfile
# bin/release/image` builds the same images.
FROM scratch
ARG TARGETOS
ARG TARGETARCH
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY ${TARGETOS}_${TARGETARCH}/controller-manager /controller-manager
USER 65532:65532
ENTRYPOINT ["/controller-manager"]
