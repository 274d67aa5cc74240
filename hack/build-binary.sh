#!/usr/bin/env bash
# Builds ./cmd/controller-manager for OS/ARCH into OUT the way the image's
# binary is built: a static binary stamped with LDFLAGS (the Makefile's
# version, commit and commit date). hack/release.sh builds each platform's
# with it, `make image` the node's.
#
# Usage: LDFLAGS=... hack/build-binary.sh OS/ARCH OUT
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "build-binary: $*" >&2; exit 1; }

[[ $# -eq 2 && "$1" == */* ]] || die "usage: LDFLAGS=... $0 OS/ARCH OUT"
LDFLAGS="${LDFLAGS:?LDFLAGS stamps the version (make sets it)}"
os="${1%/*}" arch="${1#*/}" out="$2"
[[ "${out}" == /* ]] || out="${PWD}/${out}"
cd "${ROOT}"

CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" "${GO:-go}" build -trimpath -ldflags "-s -w -buildid= ${LDFLAGS}" \
  -o "${out}" ./cmd/controller-manager
