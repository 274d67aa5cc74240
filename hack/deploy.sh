#!/usr/bin/env bash
# Applies (or deletes) config/default with the Deployment's image set to
# IMG, against the cluster of KUBECONFIG: what `make deploy` and
# `make undeploy` run. The repository's kustomizations are not edited: an
# overlay in a temporary directory sets the image (kustomize's `images`).
#
# COMPONENTS adds kustomize Components to the overlay (repository paths,
# space-separated), e.g. COMPONENTS=config/neutron for the Neutron backend.
#
# Usage: IMG=registry.example.com/controller-manager:v1 [COMPONENTS=...] hack/deploy.sh apply|delete|render
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBECTL="${KUBECTL:-${ROOT}/bin/kubectl}"
IMG="${IMG:?IMG names the image to deploy}"
[[ $# -eq 1 ]] || { echo "usage: IMG=... $0 apply|delete|render" >&2; exit 2; }

# IMG's name and tag (or digest) for kustomize's images entry.
name="${IMG}" tag="" digest=""
if [[ "${IMG}" == *@* ]]; then
  name="${IMG%@*}" digest="${IMG#*@}"
elif [[ "${IMG##*/}" == *:* ]]; then
  name="${IMG%:*}" tag="${IMG##*:}"
fi

mkdir -p "${ROOT}/bin"
overlay="$(mktemp -d "${ROOT}/bin/.deploy.XXXXXX")"
trap 'rm -rf "${overlay}"' EXIT
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "- ../../config/default"
  echo "images:"
  echo "- name: controller-manager"
  echo "  newName: ${name}"
  [[ -n "${tag}" ]] && echo "  newTag: \"${tag}\""
  [[ -n "${digest}" ]] && echo "  digest: ${digest}"
  if [[ -n "${COMPONENTS:-}" ]]; then
    echo "components:"
    for c in ${COMPONENTS}; do
      [[ -f "${ROOT}/${c}/kustomization.yaml" ]] || { echo "deploy: COMPONENTS: no kustomization in ${c}" >&2; exit 2; }
      echo "- ../../${c}"
    done
  fi
} > "${overlay}/kustomization.yaml"

case "$1" in
  render) "${KUBECTL}" kustomize "${overlay}" ;;
  apply) "${KUBECTL}" kustomize "${overlay}" | "${KUBECTL}" apply -f - ;;
  # The CRD goes too, and with it every Network: delete Networks first,
  # while the manager still runs to release their Neutron resources.
  delete) "${KUBECTL}" kustomize "${overlay}" | "${KUBECTL}" delete --ignore-not-found -f - ;;
  *) echo "usage: IMG=... $0 apply|delete|render" >&2; exit 2 ;;
esac
