#!/usr/bin/env bash
# Builds a container image from a Dockerfile with buildah (Debian's; no
# Docker daemon and no registry) and writes it as an OCI archive whose
# image name is IMAGE as a container runtime resolves it
# (controller-manager:latest is docker.io/library/controller-manager:latest),
# so that `ctr images import` (hack/node-load-image.sh) gives the kubelet
# the name a Pod spec says.
#
# Usage: hack/build-image.sh -f DOCKERFILE -t IMAGE -o ARCHIVE
#                            [--build-arg K=V ...] CONTEXT_DIR
#
# buildah's storage is private to this project (bin/.buildah) and emptied
# after each build; timestamps are fixed, so the same inputs give the same
# image.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "build-image: $*" >&2; exit 1; }

file="" image="" archive="" args=()
while [[ $# -gt 1 ]]; do
  case "$1" in
    -f) file="$2"; shift 2 ;;
    -t) image="$2"; shift 2 ;;
    -o) archive="$2"; shift 2 ;;
    --build-arg) args+=(--build-arg "$2"); shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
context="${1:-}"
[[ -n "${file}" && -n "${image}" && -n "${archive}" && -d "${context}" ]] ||
  die "usage: $0 -f DOCKERFILE -t IMAGE -o ARCHIVE [--build-arg K=V ...] CONTEXT_DIR"
command -v buildah >/dev/null ||
  die "buildah is not installed: apt-get install buildah (Debian), or build with: docker build -f ${file} -t ${image} ${context}"

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

store="${BUILDAH_STORE:-${ROOT}/bin/.buildah}"
b() { buildah --root "${store}/root" --runroot "${store}/run" --storage-driver vfs "$@"; }
mkdir -p "$(dirname "${archive}")"
rm -f "${archive}"
b build --quiet --timestamp 0 --layers=false "${args[@]}" -f "${file}" -t "${name}" "${context}" >/dev/null
b push --quiet "${name}" "oci-archive:${archive}:${name}"
b rmi --all >/dev/null 2>&1 || true
echo ">> image ${name} -> ${archive}" >&2
