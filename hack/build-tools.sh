#!/usr/bin/env bash
# Builds the pinned binaries of hack/tools/go.mod into bin/:
#   bin/kube-apiserver   k8s.io/kubernetes/cmd/kube-apiserver (version stamped)
#   bin/etcd             go.etcd.io/etcd/server/v3
#   bin/controller-gen   sigs.k8s.io/controller-tools/cmd/controller-gen
#   bin/kubectl          k8s.io/kubernetes/cmd/kubectl (only when asked for:
#                        `make kubectl`; handy against the `make run` cluster)
# A binary is rebuilt only when the Go version or a module version of the
# tools module changed since it was built (bin/.<name>.<hash> records it).
#
# Usage: hack/build-tools.sh [kube-apiserver|etcd|controller-gen|kubectl ...]
#        (default: kube-apiserver, etcd, controller-gen)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
TOOLS="${ROOT}/hack/tools"
mkdir -p "${BIN}"

sum="$(cd "${TOOLS}" && { go version; go list -m all; } | sha256sum | cut -c1-16)"

modver() { (cd "${TOOLS}" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$1"); }

build() {
  local name="$1" pkg="$2" ldflags="${3:-}"
  local stamp="${BIN}/.${name}.${sum}"
  if [[ -x "${BIN}/${name}" && -f "${stamp}" ]]; then
    return 0
  fi
  echo ">> building bin/${name} from ${pkg} (first build takes minutes; cached afterwards)" >&2
  (cd "${TOOLS}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${ldflags}" -o "${BIN}/${name}.tmp" "${pkg}")
  mv "${BIN}/${name}.tmp" "${BIN}/${name}"
  rm -f "${BIN}/.${name}."*
  touch "${stamp}"
}

# kube_binary NAME builds k8s.io/kubernetes/cmd/NAME with the release version stamped.
kube_binary() {
  local v commit
  v="$(modver k8s.io/kubernetes)"
  commit="$(modver k8s.io/kubernetes)"
  # The same variables the Kubernetes release build sets (hack/lib/version.sh),
  # so /version reports the pinned release rather than v0.0.0-master.
  local pfx="k8s.io/client-go/pkg/version" cpfx="k8s.io/component-base/version"
  local major="${v#v}"; major="${major%%.*}"
  local minor="${v#v*.}"; minor="${minor%%.*}"
  local date; date="$(date -u -d @0 +%Y-%m-%dT%H:%M:%SZ)"
  local flags=""
  for p in "${pfx}" "${cpfx}"; do
    flags+=" -X ${p}.gitVersion=${v} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor}"
    flags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=${date} -X ${p}.gitCommit=${commit}"
  done
  build "$1" "k8s.io/kubernetes/cmd/$1" "${flags}"
}

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(etcd kube-apiserver controller-gen)
for t in "${targets[@]}"; do
  case "${t}" in
    kube-apiserver|kubectl) kube_binary "${t}" ;;
    etcd) build etcd go.etcd.io/etcd/server/v3 ;;
    controller-gen) build controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    *) echo "unknown tool: ${t}" >&2; exit 2 ;;
  esac
done
