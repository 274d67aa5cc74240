#!/usr/bin/env bash
# Builds ./cmd/controller-manager for OS/ARCH into OUT the way the image's
# binary is built: a static binary stamped with LDFLAGS (the Makefile's
# version, commit and commit date). hack/release.sh builds each platform's
# with it, `make image` the node's.
#
# The same commit gives the same bytes on any machine:
# - the Go toolchain is the one go.mod's toolchain line names, whatever go
#   is installed: GOTOOLCHAIN names it, and the go command fetches it from
#   the module proxy (golang.org/toolchain, checked against the checksum
#   database) when the local go is another;
# - no Go setting of the machine's that changes what is built applies: its
#   go env file is not read (GOENV=off) and GOFLAGS, GOWORK, GOEXPERIMENT,
#   GOFIPS140 and the instruction set levels (GOAMD64, GOARM64: their
#   defaults) are set here. Kept are only where modules and toolchains come
#   from and where the caches are, which change no byte (go.sum and the
#   checksum database fix what is fetched);
# - -trimpath (no path of this machine), -buildvcs=false (no version control
#   state: a clone records its commit and whether any file is changed or
#   untracked, a git worktree nothing; make stamps the commit instead),
#   -buildid= (no build ID), CGO_ENABLED=0 (no C toolchain, no libc);
# - the file's mode is 0755 whatever the umask: the image's layer records it.
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
GO="${GO:-go}"

toolchain="$(sed -n 's/^toolchain //p' go.mod)"
[[ -n "${toolchain}" ]] || die "go.mod has no toolchain line: nothing names the Go to build with"
export GOTOOLCHAIN="${toolchain}"
kept=(GOPROXY GONOPROXY GOPRIVATE GONOSUMDB GOSUMDB GOINSECURE GOAUTH GOMODCACHE GOCACHE)
mapfile -t values < <("${GO}" env "${kept[@]}")
[[ ${#values[@]} -eq ${#kept[@]} ]] || die "go env ${kept[*]} failed"
for i in "${!kept[@]}"; do export "${kept[i]}=${values[i]}"; done
export GOENV=off GOFLAGS=-mod=readonly GOWORK=off GOEXPERIMENT= GOFIPS140=off GOAMD64=v1 GOARM64=v8.0 CGO_ENABLED=0
have="$("${GO}" env GOVERSION)"
[[ "${have}" == "${toolchain}" ]] ||
  die "go runs ${have}, not ${toolchain} (go.mod's toolchain line) although GOTOOLCHAIN=${toolchain}: is GOROOT set to another Go?"

GOOS="${os}" GOARCH="${arch}" "${GO}" build -trimpath -buildvcs=false -ldflags "-s -w -buildid= ${LDFLAGS}" \
  -o "${out}" ./cmd/controller-manager
chmod 0755 "${out}"
