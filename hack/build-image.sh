#!/usr/bin/env bash
# Builds a container image from a Dockerfile with buildah (Debian's; no
# Docker daemon and no registry) and writes it as an OCI archive whose
# image name is IMAGE as a container runtime resolves it
# (controller-manager:latest is docker.io/library/controller-manager:latest),
# so that `ctr images import` (hack/node-load-image.sh) gives the kubelet
# the name a Pod spec says.
#
# Usage: hack/build-image.sh -f DOCKERFILE -t IMAGE -o ARCHIVE
#                            [--platform OS/ARCH[,OS/ARCH...]]
#                            [--build-arg K=V ...] CONTEXT_DIR
#
# With --platform the archive holds an OCI image index of one image per
# platform, built one after the other in the order given (so the index is
# the same every time). The Dockerfile picks each platform's files with the
# TARGETOS and TARGETARCH build arguments; nothing runs at build time, so no
# emulation is needed. Without it, one image of the build machine's platform.
#
# buildah's storage is private to each build (bin/.buildah.*) and removed
# afterwards; timestamps are fixed, and the archive is written with fixed
# names, order, owners and times, so the same inputs give the same bytes.
# buildah is installed from Debian when missing (as root).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "build-image: $*" >&2; exit 1; }

file="" image="" archive="" platforms="" args=()
while [[ $# -gt 1 ]]; do
  case "$1" in
    -f) file="$2"; shift 2 ;;
    -t) image="$2"; shift 2 ;;
    -o) archive="$2"; shift 2 ;;
    --platform) platforms="$2"; shift 2 ;;
    --build-arg) args+=(--build-arg "$2"); shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
context="${1:-}"
[[ -n "${file}" && -n "${image}" && -n "${archive}" && -d "${context}" ]] ||
  die "usage: $0 -f DOCKERFILE -t IMAGE -o ARCHIVE [--platform OS/ARCH[,...]] [--build-arg K=V ...] CONTEXT_DIR"
if ! command -v buildah >/dev/null; then
  # shellcheck source=hack/lib/install.sh
  source "${ROOT}/hack/lib/install.sh"
  install_packages build-image "${TMPDIR:-/tmp}/build-image-apt.log" buildah ||
    die "buildah is needed (or build with: docker build -f ${file} -t ${image} ${context})"
fi

# The name a container runtime gives IMAGE (the Docker reference rules the
# CRI uses): a first component without '.' or ':' that is not "localhost"
# is a Docker Hub repository; a Docker Hub name of one component is in
# library/; a name without tag or digest is :latest.
normalize() {
  local ref="$1" first="${1%%/*}"
  if [[ "${ref}" != */* ]] || [[ "${first}" != *.* && "${first}" != *:* && "${first}" != localhost ]]; then
    [[ "${ref}" == */* ]] || ref="library/${ref}"
    ref="docker.io/${ref}"
  fi
  local last="${ref##*/}"
  [[ "${last}" == *:* || "${last}" == *@* ]] || ref="${ref}:latest"
  echo "${ref}"
}
name="$(normalize "${image}")"

# A store of this build's own, so that builds at the same time do not meet.
mkdir -p "${ROOT}/bin"
store="$(mktemp -d "${ROOT}/bin/.buildah.XXXXXX")"
b() { buildah --root "${store}/root" --runroot "${store}/run" --storage-driver vfs "$@"; }
trap 'b rmi --all >/dev/null 2>&1 || true; rm -rf --one-file-system "${store}"' EXIT
mkdir -p "$(dirname "${archive}")"
rm -f "${archive}"
layout="${store}/layout"
if [[ -z "${platforms}" ]]; then
  b build --quiet --timestamp 0 --layers=false "${args[@]}" -f "${file}" -t "${name}" "${context}" >/dev/null
  b push --quiet "${name}" "oci:${layout}:${name}"
else
  b manifest create "${name}" >/dev/null
  IFS=, read -ra list <<<"${platforms}"
  for p in "${list[@]}"; do
    id="$(b build --quiet --timestamp 0 --layers=false --platform "${p}" "${args[@]}" -f "${file}" "${context}")"
    b manifest add "${name}" "${id}" >/dev/null
  done
  b manifest push --all --quiet "${name}" "oci:${layout}:${name}"
fi
# An OCI layout in a tar archive (what oci-archive: is), written with GNU
# tar's reproducible settings instead of buildah's own, which stamps times.
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=u=rwX,go=rX --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "${archive}" -C "${layout}" oci-layout index.json blobs
echo ">> image ${name}${platforms:+ (${platforms})} -> ${archive}" >&2
