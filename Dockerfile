# The controller-manager image: the static binary and the CA certificates
# (TLS to Keystone and Neutron) on an empty base, run as the non-root user
# 65532 (the Deployment's restricted security context requires non-root and
# runs it on a read-only root filesystem). Nothing else: no shell, no libc.
#
# `make image` is the recipe: it fills the build context bin/image/ with
#   controller-manager    CGO_ENABLED=0 go build ./cmd/controller-manager
#   ca-certificates.crt   the CA bundle of Debian's ca-certificates
# and builds this file with buildah (hack/build-image.sh) into an OCI
# archive; `docker build -f Dockerfile bin/image` builds the same image.
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY controller-manager /controller-manager
USER 65532:65532
ENTRYPOINT ["/controller-manager"]
