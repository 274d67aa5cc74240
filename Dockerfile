# The controller-manager image: the static binary on an empty base, run as
# the non-root user 65532 (the Deployment's restricted security context
# requires non-root and runs it on a read-only root filesystem). Nothing
# else: no shell, no libc, no CA bundle (the binary carries Mozilla's roots,
# golang.org/x/crypto/x509roots/fallback as go.mod pins it, for TLS to
# Keystone and Neutron), so that nothing of the build machine is in it.
#
# The build context holds, per platform, what Go cross-compiles
# (hack/build-binary.sh):
#   <os>_<arch>/controller-manager   CGO_ENABLED=0 GOOS=<os> GOARCH=<arch> go build ./cmd/controller-manager
# TARGETOS and TARGETARCH (set by buildah and docker buildx for each
# --platform) pick the binary; nothing runs at build time, so an image for
# another architecture needs no emulation. `make image` (one platform) and
# `make release` (linux/amd64 and linux/arm64) fill the context and build
# this file with buildah (hack/build-image.sh) into an OCI archive;
# `docker buildx build --platform linux/amd64,linux/arm64 -f Dockerfile
# CONTEXT` builds images of the same files from such a context (not of the
# same bytes: those are buildah's).
FROM scratch
ARG TARGETOS
ARG TARGETARCH
COPY ${TARGETOS}_${TARGETARCH}/controller-manager /controller-manager
USER 65532:65532
ENTRYPOINT ["/controller-manager"]
