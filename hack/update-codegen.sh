#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis:
#   pkg/apis/*/*/zz_generated.deepcopy.go      deepcopy-gen
#   pkg/generated/clientset/versioned          client-gen
#   pkg/generated/applyconfiguration           applyconfiguration-gen
#   pkg/generated/listers                      lister-gen
#   pkg/generated/informers/externalversions   informer-gen
#   config/crd/*.yaml                          controller-gen (CRDs from kubebuilder markers)
# and the manager's ClusterRole from the +kubebuilder:rbac markers in internal/:
#   config/rbac/role.yaml                      controller-gen
# The code generators come from k8s.io/code-generator's kube_codegen.sh at the
# version pinned in hack/tools/go.mod; controller-gen is bin/controller-gen,
# built by hack/build-tools.sh.
#
# Usage: hack/update-codegen.sh [manifests]
#   manifests    only the CRDs and the ClusterRole (`make manifests`)
# Environment:
#   OUTPUT_ROOT  write into this copy of the tree instead of the repository
#                (used by hack/verify-codegen.sh)
set -o errexit
set -o nounset
set -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
OUT="${OUTPUT_ROOT:-${ROOT}}"
MODULE="github.com/kube-sample/controller-manager"

generate_manifests() {
  "${ROOT}/hack/build-tools.sh" controller-gen
  echo "Generating CRDs into config/crd"
  (cd "${OUT}" && "${ROOT}/bin/controller-gen" \
    crd:crdVersions=v1 \
    paths="./pkg/apis/..." \
    output:crd:artifacts:config="${OUT}/config/crd")
  # The markers are read from the tree: OUTPUT_ROOT holds only copies of
  # what the generators write.
  echo "Generating the ClusterRole into config/rbac/role.yaml"
  (cd "${ROOT}" && "${ROOT}/bin/controller-gen" \
    rbac:roleName=controller-manager \
    paths="./internal/..." \
    output:rbac:artifacts:config="${OUT}/config/rbac")
}

if [[ "${1:-}" == manifests ]]; then
  generate_manifests
  exit 0
fi

CODEGEN_PKG="$(cd "${ROOT}/hack/tools" && go list -m -f '{{.Dir}}' k8s.io/code-generator)"
if [[ -z "${CODEGEN_PKG}" ]]; then # not in the module cache yet
  (cd "${ROOT}/hack/tools" && go mod download k8s.io/code-generator)
  CODEGEN_PKG="$(cd "${ROOT}/hack/tools" && go list -m -f '{{.Dir}}' k8s.io/code-generator)"
fi
if [[ -z "${CODEGEN_PKG}" || ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]]; then
  echo "update-codegen: kube_codegen.sh of k8s.io/code-generator (hack/tools/go.mod) not found" >&2
  exit 1
fi

# kube_codegen.sh installs the generators into GOBIN; keep them in the
# (git-ignored) bin/ of this project rather than in the user's GOPATH.
export GOBIN="${ROOT}/bin/code-generator"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

cd "${OUT}"

kube::codegen::gen_helpers \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${OUT}/pkg/apis"

# kube_codegen.sh greps these for stale files before generating; create them
# so a first run does not print "No such file or directory".
mkdir -p "${OUT}/pkg/generated/"{applyconfiguration,clientset,listers,informers}
kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --output-dir "${OUT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${OUT}/pkg/apis"

generate_manifests
