#!/usr/bin/env bash
# Builds the pinned binaries of hack/tools/go.mod into bin/:
#   bin/kube-apiserver   k8s.io/kubernetes/cmd/kube-apiserver (version stamped)
#   bin/etcd             go.etcd.io/etcd/server/v3
#   bin/controller-gen   sigs.k8s.io/controller-tools/cmd/controller-gen
#   bin/kubectl          k8s.io/kubernetes/cmd/kubectl (only when asked for:
#                        `make kubectl`; handy against the `make run` cluster)
#   node                 etcd and every Kubernetes binary of the one-node
#                        cluster of hack/node-up.sh: kube-apiserver,
#                        kube-controller-manager, kube-scheduler, kube-proxy,
#                        kubelet, kubeadm (certificates and kubeconfigs), kubectl
# and of hack/tools/traefik/go.mod (a module of its own: Traefik's Kubernetes
# dependencies are older than kube-apiserver's):
#   bin/traefik          github.com/traefik/traefik/v3/cmd/traefik, the ingress
#                        controller the traffic tests send requests through
# and of hack/tools/helm/go.mod (a module of its own: Helm's Kubernetes
# dependencies are newer than kube-apiserver's):
#   bin/helm             helm.sh/helm/v4/cmd/helm, which `make verify` lints and
#                        renders charts/controller-manager with (hack/verify-chart.sh)
#                        and the e2e test installs it with
# and of hack/tools/externaldns/go.mod (a module of its own: external-dns's
# Kubernetes dependencies are newer than kube-apiserver's, and it needs a
# newer Go, its go.mod's toolchain, which the go command fetches from the
# module proxy as golang.org/toolchain):
#   bin/external-dns     sigs.k8s.io/external-dns, which the DNS cut-over test
#                        (test/integration/dns) runs against the test API server
# and of hack/tools/prometheus/go.mod (a module of its own: Prometheus's
# dependencies move at their own pace), both in one `go build` whichever is
# asked for, so that the packages they share compile once:
#   bin/promtool         github.com/prometheus/prometheus/cmd/promtool, which
#                        checks and unit-tests the shipped alert rules
#                        (config/prometheus, test/alerts)
#   bin/prometheus       github.com/prometheus/prometheus/cmd/prometheus, for
#                        tests that load those rules against a running manager
# and of hack/tools/sbom/go.mod (only when asked for):
#   bin/cyclonedx-gomod  github.com/CycloneDX/cyclonedx-gomod, which writes the
#                        SBOM of each release binary (hack/release.sh)
# A binary is rebuilt only when the Go version or a module version of its
# tools module changed since it was built (bin/.<name>.<hash> records it).
#
# Usage: hack/build-tools.sh [kube-apiserver|etcd|controller-gen|traefik|helm|external-dns|promtool|prometheus|kubectl|cyclonedx-gomod|node ...]
#        (default: kube-apiserver, etcd, controller-gen, traefik, helm, external-dns, promtool, prometheus)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
TOOLS="${ROOT}/hack/tools"
mkdir -p "${BIN}"

modsum() { (cd "$1" && { go version; go list -m all; } | sha256sum | cut -c1-16); }

modver_in() { (cd "$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2"); }
modver() { modver_in "${TOOLS}" "$1"; }

# built NAME SUM: bin/NAME is there, built of the modules SUM names.
built() { [[ -x "${BIN}/$1" && -f "${BIN}/.$1.$2" ]]; }

# lock NAME holds bin/.lock.NAME until the job (a subshell) ends: one build
# of a binary at a time across calls (`make test` builds test-e2e's tools
# in the background while the tests run; a call asking for one of them
# meanwhile waits, then finds it built). Taken only when something is to
# be built, so that a call whose binaries are built never waits.
lock() {
  local fd
  exec {fd}>"${BIN}/.lock.$1"
  flock "${fd}"
}

# build NAME PKG [LDFLAGS [MODULE_DIR [SUM]]] builds PKG of the tools module
# in MODULE_DIR (default hack/tools) into bin/NAME, stripped.
build() {
  local name="$1" pkg="$2" ldflags="${3:-}" dir="${4:-${TOOLS}}" s="${5:-}"
  [[ -n "${s}" ]] || s="$(modsum "${TOOLS}")"
  built "${name}" "${s}" && return 0
  lock "${name}"
  built "${name}" "${s}" && return 0
  echo ">> building bin/${name} from ${pkg} (first build takes minutes; cached afterwards)" >&2
  (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${ldflags}" -o "${BIN}/${name}.tmp" "${pkg}")
  mv "${BIN}/${name}.tmp" "${BIN}/${name}"
  rm -f "${BIN}/.${name}."*
  touch "${BIN}/.${name}.${s}"
}

# kube_binaries NAME... builds k8s.io/kubernetes/cmd/NAME for each NAME not
# yet built, with the release version stamped, in one `go build` so that
# the packages they share compile once.
kube_binaries() {
  local v names=() pkgs=() n sum
  sum="$(modsum "${TOOLS}")"
  kube_missing() { names=() pkgs=(); for n in "$@"; do built "${n}" "${sum}" || { names+=("${n}"); pkgs+=("k8s.io/kubernetes/cmd/${n}"); }; done; }
  kube_missing "$@"
  [[ ${#names[@]} -eq 0 ]] && return 0
  lock kubernetes
  kube_missing "$@"
  [[ ${#names[@]} -eq 0 ]] && return 0
  v="$(modver k8s.io/kubernetes)"
  # The same variables the Kubernetes release build sets (hack/lib/version.sh),
  # so /version reports the pinned release rather than v0.0.0-master.
  local pfx="k8s.io/client-go/pkg/version" cpfx="k8s.io/component-base/version"
  local major="${v#v}"; major="${major%%.*}"
  local minor="${v#v*.}"; minor="${minor%%.*}"
  local date; date="$(date -u -d @0 +%Y-%m-%dT%H:%M:%SZ)"
  local flags=""
  for p in "${pfx}" "${cpfx}"; do
    flags+=" -X ${p}.gitVersion=${v} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor}"
    flags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=${date} -X ${p}.gitCommit=${v}"
  done
  echo ">> building ${names[*]} (Kubernetes ${v}) into bin/ (first build takes minutes; cached afterwards)" >&2
  local tmp
  tmp="$(mktemp -d "${BIN}/.build.XXXXXX")"
  (cd "${TOOLS}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${flags}" -o "${tmp}/" "${pkgs[@]}")
  for n in "${names[@]}"; do
    mv "${tmp}/${n}" "${BIN}/${n}"
    rm -f "${BIN}/.${n}."*
    touch "${BIN}/.${n}.${sum}"
  done
  rm -rf "${tmp}"
}

# prometheus_binaries builds bin/promtool and bin/prometheus, those not yet
# built, in one `go build`: most of promtool's packages are the server's.
# Without the service discovery of the clouds (AWS, Azure, GCE, ...), which
# nothing here uses and which is most of the build; Kubernetes' stays, for a
# Prometheus scraping a cluster's Pods.
prometheus_binaries() {
  local pdir="${TOOLS}/prometheus" psum n names=() pkgs=()
  psum="$(modsum "${pdir}")"
  prom_missing() { names=() pkgs=(); for n in promtool prometheus; do built "${n}" "${psum}" || { names+=("${n}"); pkgs+=("github.com/prometheus/prometheus/cmd/${n}"); }; done; }
  prom_missing
  [[ ${#names[@]} -eq 0 ]] && return 0
  lock prometheus
  prom_missing
  [[ ${#names[@]} -eq 0 ]] && return 0
  # Stamped like Prometheus's release build (.promu.yml), so `promtool
  # --version` names the pinned release (module v0.316.0 is Prometheus 3.16.0).
  local pv
  # go mod download first: go list -m names no directory for a module the
  # cache does not hold yet (a new machine).
  pv="$(cd "${pdir}" && go mod download github.com/prometheus/prometheus && cat "$(go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)/VERSION")"
  echo ">> building ${names[*]} (Prometheus ${pv}) into bin/ (first build takes minutes; cached afterwards)" >&2
  local tmp
  tmp="$(mktemp -d "${BIN}/.build.XXXXXX")"
  (cd "${pdir}" && CGO_ENABLED=0 go build -trimpath -tags remove_all_sd,enable_kubernetes_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=${pv} -X github.com/prometheus/common/version.Revision=${pv} -X github.com/prometheus/common/version.Branch=HEAD" \
    -o "${tmp}/" "${pkgs[@]}")
  for n in "${names[@]}"; do
    mv "${tmp}/${n}" "${BIN}/${n}"
    rm -f "${BIN}/.${n}."*
    touch "${BIN}/.${n}.${psum}"
  done
  rm -rf "${tmp}"
}

# The binaries of the one-node cluster of hack/node-up.sh (make test-e2e).
node_binaries=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl)

# Each target names one job; the jobs build in parallel (independent
# modules, or distinct binaries of one module sharing the build cache), so
# that one's downloads and links overlap another's compiling. The
# Kubernetes binaries asked for, however asked, are one job: one `go build`.
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(etcd kube-apiserver controller-gen traefik helm external-dns promtool prometheus)
kube=()
declare -A job=()
for t in "${targets[@]}"; do
  case "${t}" in
    kube-apiserver|kubectl) kube+=("${t}") ;;
    node) kube+=("${node_binaries[@]}"); job[etcd]=1 ;;
    promtool|prometheus) job[prometheus]=1 ;;
    etcd|controller-gen|traefik|helm|external-dns|cyclonedx-gomod) job[${t}]=1 ;;
    *) echo "unknown tool: ${t}" >&2; exit 2 ;;
  esac
done
if [[ ${#kube[@]} -gt 0 ]]; then
  mapfile -t kube < <(printf '%s\n' "${kube[@]}" | sort -u)
  job[kubernetes]=1
fi

build_job() {
  case "$1" in
    kubernetes) kube_binaries "${kube[@]}" ;;
    etcd) build etcd go.etcd.io/etcd/server/v3 ;;
    controller-gen) build controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    traefik)
      # Stamped like Traefik's release build, so `traefik version` and its
      # logs name the pinned release.
      local tdir="${TOOLS}/traefik" tv
      tv="$(modver_in "${tdir}" github.com/traefik/traefik/v3)"
      build traefik github.com/traefik/traefik/v3/cmd/traefik \
        "-X github.com/traefik/traefik/v3/pkg/version.Version=${tv}" \
        "${tdir}" "$(modsum "${tdir}")"
      ;;
    helm)
      # Stamped like Helm's release build, so `helm version` names the
      # pinned release.
      local hdir="${TOOLS}/helm" hv
      hv="$(modver_in "${hdir}" helm.sh/helm/v4)"
      build helm helm.sh/helm/v4/cmd/helm \
        "-X helm.sh/helm/v4/internal/version.version=${hv} -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
        "${hdir}" "$(modsum "${hdir}")"
      ;;
    external-dns)
      # Every go command of its module runs on the toolchain its go.mod
      # names, whatever GOTOOLCHAIN this machine defaults to (the job is a
      # subshell of its own: the export stays in it).
      local edir="${TOOLS}/externaldns" ev esum
      GOTOOLCHAIN="$(sed -n 's/^toolchain //p' "${edir}/go.mod")"
      export GOTOOLCHAIN
      ev="$(modver_in "${edir}" sigs.k8s.io/external-dns)"
      # Its go.sum, not `go list -m all`, says which versions it is built
      # of: the module proxy serves some modules of its graph that the
      # build never reads only in part, which fails that listing.
      esum="$(cd "${edir}" && { go version; cat go.mod go.sum; } | sha256sum | cut -c1-16)"
      # Stamped like external-dns's release build, so its start-up log
      # names the pinned release.
      build external-dns sigs.k8s.io/external-dns \
        "-X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=${ev}" \
        "${edir}" "${esum}"
      ;;
    prometheus) prometheus_binaries ;;
    cyclonedx-gomod)
      local sdir="${TOOLS}/sbom"
      build cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod "" \
        "${sdir}" "$(modsum "${sdir}")"
      ;;
  esac
}

# Start every job, its output prefixed with its name, then wait for all
# and fail when one did (each says so).
pids=() names=()
for j in "${!job[@]}"; do
  { build_job "${j}" 2>&1 | sed -u "s|^|[${j}] |" >&2; } &
  pids+=("$!") names+=("${j}")
done
rc=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "hack/build-tools.sh: building ${names[$i]} failed (its lines above start with [${names[$i]}])" >&2
    rc=1
  fi
done
exit "${rc}"
