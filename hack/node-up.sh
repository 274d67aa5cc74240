#!/usr/bin/env bash
# Starts a real one-node Kubernetes (the pinned v1.36.3) on this machine,
# inside a private network namespace, for the "as deployed" tests
# (make test-e2e) and for trying the image by hand:
#
#   hack/node-up.sh STATE_DIR          start it; returns once the node is Ready
#   hack/node-exec.sh STATE_DIR CMD... run CMD in the node's network
#                                      (KUBECONFIG set to the admin's)
#   hack/node-load-image.sh STATE_DIR ARCHIVE
#                                      import an OCI archive into the node's
#                                      containerd (images are never pulled)
#   hack/node-down.sh STATE_DIR        stop and remove all of it
#
# What runs, each as a plain process whose PID is in STATE_DIR/pids:
#   etcd, kube-apiserver, kube-controller-manager (every default controller:
#   garbage collector, ServiceAccounts, Deployments, disruption, ...),
#   kube-scheduler, kube-proxy (iptables) and the kubelet, built from the
#   pinned modules into bin/ (hack/build-tools.sh node); containerd, runc and
#   the CNI plugins (bridge, host-local, loopback, portmap) from Debian,
#   installed when missing. Certificates and kubeconfigs come from kubeadm's
#   own phases. The sandbox ("pause") image is compiled from the pinned
#   Kubernetes module's build/pause and built with buildah.
#
# Network: everything lives in the network namespace /run/netns/kube-node-*
# made here; nothing is added to this machine's own namespace. The node and
# the API server are 198.51.100.2 (on the namespace's lo), Pods get
# addresses from 203.0.113.0/24 on a bridge, Services from 192.0.2.0/24.
# cgroups: the node's processes, its containers' among them, run under one
# cgroup of its own (below this process's memory cgroup), cgroupfs driver
# (cgroup v1, no systemd).
#
# STATE_DIR/kubeconfig is the cluster admin's kubeconfig; STATE_DIR/logs has
# every component's log and the API server's audit log (audit.log: every
# write, at the Metadata level); STATE_DIR/node.env the names node-down needs.
# On failure the failing component's log tail is printed and what was
# started is stopped again (NODE_KEEP=1 keeps it for a look).
# Needs root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
[[ $# -eq 1 ]] || { echo "usage: $0 STATE_DIR" >&2; exit 2; }
mkdir -p "$1"
STATE="$(cd "$1" && pwd)"
# shellcheck source=hack/lib/node.sh
source "${ROOT}/hack/lib/node.sh"

say() { echo ">> node: $*" >&2; }
die() { echo "node-up: $*" >&2; exit 1; }

[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, cgroups, containerd)"
# STATE is emptied below: only a new or empty directory, or one node-up made.
if [[ "${STATE}" == / || ( -n "$(ls -A "${STATE}")" && ! -f "${STATE}/.kube-node-state" ) ]]; then
  die "${STATE} is neither empty nor a state directory of node-up: name a new directory"
fi

if [[ -f "${STATE}/node.env" ]]; then
  if [[ -e "${NETNS}" ]] && in_node "${BIN}/kubectl" --kubeconfig "${STATE}/kubeconfig" \
      --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
    say "already running (state in ${STATE})"
    exit 0
  fi
  say "a previous node in ${STATE} is not answering; removing what is left of it"
  "${ROOT}/hack/node-down.sh" "${STATE}" >&2
fi

# --- packages and binaries ---
PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2 buildah ca-certificates gcc libc6-dev util-linux procps)
installed() {
  local b
  for b in containerd ctr runc iptables conntrack ip buildah gcc nsenter; do
    command -v "${b}" >/dev/null || return 1
  done
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback && -x /usr/lib/cni/portmap ]]
}
if ! installed; then
  # shellcheck source=hack/lib/install.sh
  source "${ROOT}/hack/lib/install.sh"
  install_packages node-up "${TMPDIR:-/tmp}/node-apt.log" "${PACKAGES[@]}" || exit 1
  installed || die "packages installed but a binary is missing"
fi
"${ROOT}/hack/build-tools.sh" node

# --- failure handling ---
started=""
fail() {
  local code=$? c
  trap - EXIT
  [[ ${code} -eq 0 ]] && return
  echo "node-up: failed; the components' logs (${LOGS}):" >&2
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kube-proxy kubelet; do
    [[ -s "${LOGS}/${c}.log" ]] || continue
    echo "--- ${c} (last 15 lines) ---" >&2
    tail -15 "${LOGS}/${c}.log" >&2
  done
  if [[ -n "${started}" && -z "${NODE_KEEP:-}" ]]; then
    "${ROOT}/hack/node-down.sh" "${STATE}" >&2 || true
  fi
  exit "${code}"
}
trap fail EXIT

# --- state directory, namespace, cgroup ---
mkdir -p "${STATE}"
find "${STATE}" -mindepth 1 -delete
touch "${STATE}/.kube-node-state"
mkdir -p "${LOGS}" "${PIDS}" "${PKI}" "${STATE}"/{etcd,kubelet,pod-logs,cni/net.d,cni/ipam,containerd,image}
chmod 700 "${STATE}"

# The cgroup every process of the node runs under: below this process's own
# memory cgroup (the same path in every hierarchy, as the kubelet's cgroupfs
# driver wants), so the node is accounted where its starter is.
base="$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)"
CGROUP="${base%/}/${NAME}"
cat > "${STATE}/node.env" <<EOF
NAME=${NAME}
NODE_NAME=${NODE_NAME}
NETNS=${NETNS}
CGROUP=${CGROUP}
CNI_NETWORK=${NAME}
NODE_IP=${NODE_IP}
API_SERVER=https://${NODE_IP}:${API_PORT}
EOF
started=1

# Every directory made here is listed (deepest last) for node-down.
: > "${STATE}/cgroups"
while read -r h; do
  rel=""
  for part in ${CGROUP//\// } system; do
    rel="${rel}/${part}"
    [[ -d "${h}${rel}" ]] && continue
    mkdir "${h}${rel}"
    echo "${h}${rel}" >> "${STATE}/cgroups"
    if [[ -f "${h}${rel}/cpuset.cpus" ]]; then
      # A new cpuset takes no task until it has CPUs and memory nodes.
      cat "$(dirname "${h}${rel}")/cpuset.cpus" > "${h}${rel}/cpuset.cpus"
      cat "$(dirname "${h}${rel}")/cpuset.mems" > "${h}${rel}/cpuset.mems"
    fi
  done
done < <(cgroup_hierarchies)
hierarchies=()
mapfile -t hierarchies < <(cgroup_hierarchies)

# Directories the runtime, the kubelet and `ip netns` make outside STATE
# (paths they do not let us choose): node-down removes those that did not
# exist before, once nothing is left in them.
: > "${STATE}/made-outside"
for d in /run/netns /run/containerd /var/lib/cni /etc/cni /var/lib/kubelet /var/log/containers; do
  [[ -e "${d}" ]] || echo "${d}" >> "${STATE}/made-outside"
done
mountpoint -q /run/netns || echo "mount /run/netns" >> "${STATE}/made-outside"

ip netns add "${NAME}"
in_node ip link set lo up
in_node ip addr add "${NODE_IP}/32" dev lo
# kube-apiserver and the kubelet pick their address from the default route.
in_node ip route add default dev lo
in_node sysctl -qw net.ipv4.ip_forward=1
# Pod-to-Service traffic that kube-proxy sends back to a Pod on the same
# bridge must pass iptables (the kube-proxy expects this setting).
in_node sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null ||
  say "net.bridge.bridge-nf-call-iptables is not available: Pod-to-Service traffic to a Pod on the node may fail"

# start NAME CMD... starts a component in the node's network namespace and
# in <cgroup>/system (so whatever it starts, containerd's shims too, stays
# in the node's cgroup), in a session of its own, logging to logs/NAME.log.
start() {
  local name="$1"; shift
  (
    for h in "${hierarchies[@]}"; do echo "${BASHPID}" > "${h}${CGROUP}/system/cgroup.procs"; done
    exec setsid nsenter --net="${NETNS}" -- "$@"
  ) >"${LOGS}/${name}.log" 2>&1 </dev/null &
  echo $! > "${PIDS}/${name}.pid"
}

# wait_for WHAT SECONDS COMPONENT CMD... retries CMD until it succeeds, the
# deadline passes or COMPONENT's process is gone.
wait_for() {
  local what="$1" secs="$2" comp="$3"; shift 3
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "${PIDS}/${comp}.pid")" 2>/dev/null || die "${comp} exited while waiting for ${what}"
    ((SECONDS < deadline)) || die "${what}: not within ${secs}s"
    sleep 0.5
  done
}

# --- certificates and kubeconfigs (kubeadm's own phases) ---
cat > "${STATE}/kubeadm.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: ${NODE_IP}
  bindPort: ${API_PORT}
nodeRegistration:
  name: ${NODE_NAME}
  criSocket: unix://${CONTAINERD_SOCK}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $("${BIN}/kubectl" version --client -o json | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | head -1)
clusterName: ${NAME}
certificatesDir: ${PKI}
networking:
  serviceSubnet: ${SERVICE_CIDR}
  podSubnet: ${POD_CIDR}
  dnsDomain: cluster.local
etcd:
  external:
    endpoints: [http://127.0.0.1:2379]
EOF
kubeadm() { "${BIN}/kubeadm" "$@" >>"${LOGS}/kubeadm.log" 2>&1 || die "kubeadm $* failed (${LOGS}/kubeadm.log)"; }
kubeadm init phase certs all --config "${STATE}/kubeadm.yaml"
kubeadm init phase kubeconfig all --config "${STATE}/kubeadm.yaml" --kubeconfig-dir "${STATE}"
"${BIN}/kubeadm" kubeconfig user --config "${STATE}/kubeadm.yaml" --client-name system:kube-proxy \
  > "${STATE}/kube-proxy.conf" 2>>"${LOGS}/kubeadm.log" || die "kubeadm kubeconfig user failed (${LOGS}/kubeadm.log)"
# super-admin.conf is in system:masters: the admin kubeconfig, which needs no
# RBAC binding to exist first.
cp "${STATE}/super-admin.conf" "${STATE}/kubeconfig"
kubectl() { in_node "${BIN}/kubectl" --kubeconfig "${STATE}/kubeconfig" "$@"; }

# --- control plane ---
say "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler (${STATE})"
start etcd "${BIN}/etcd" --data-dir "${STATE}/etcd" --name "${NAME}" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster "${NAME}=http://127.0.0.1:2380" --unsafe-no-fsync
wait_for "etcd to be healthy" 60 etcd in_node curl -fsS http://127.0.0.1:2379/health

# The audit log records who wrote what (tests read it: which component
# deleted an object, which replica wrote while it held the Lease).
cat > "${STATE}/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  verbs: [get, list, watch]
- level: None
  resources:
  - group: ""
    resources: [events]
  - group: events.k8s.io
    resources: [events]
# Lease writes with their body: who held the Lease when (the e2e tests
# check that only the holder of the manager's Lease wrote).
- level: Request
  resources:
  - group: coordination.k8s.io
    resources: [leases]
- level: Metadata
EOF
start kube-apiserver "${BIN}/kube-apiserver" \
  --audit-policy-file "${STATE}/audit-policy.yaml" --audit-log-path "${LOGS}/audit.log" \
  --advertise-address "${NODE_IP}" --bind-address "${NODE_IP}" --secure-port "${API_PORT}" \
  --etcd-servers http://127.0.0.1:2379 \
  --allow-privileged=true --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --client-ca-file "${PKI}/ca.crt" \
  --tls-cert-file "${PKI}/apiserver.crt" --tls-private-key-file "${PKI}/apiserver.key" \
  --kubelet-client-certificate "${PKI}/apiserver-kubelet-client.crt" \
  --kubelet-client-key "${PKI}/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP \
  --proxy-client-cert-file "${PKI}/front-proxy-client.crt" --proxy-client-key-file "${PKI}/front-proxy-client.key" \
  --requestheader-client-ca-file "${PKI}/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
  --requestheader-extra-headers-prefix X-Remote-Extra- --requestheader-group-headers X-Remote-Group \
  --requestheader-username-headers X-Remote-User \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "${PKI}/sa.pub" --service-account-signing-key-file "${PKI}/sa.key" \
  --service-cluster-ip-range "${SERVICE_CIDR}"
wait_for "kube-apiserver to be ready" 120 kube-apiserver kubectl get --raw /readyz
# What kubeadm init binds: admin.conf's group is cluster-admin, and the API
# server's client certificate for the kubelet (kubectl logs, exec) may use
# the kubelet's API.
kubectl create clusterrolebinding kubeadm:cluster-admins --clusterrole cluster-admin \
  --group kubeadm:cluster-admins >/dev/null
kubectl create clusterrolebinding kubeadm:apiserver-kubelet-client --clusterrole system:kubelet-api-admin \
  --user kube-apiserver-kubelet-client >/dev/null

start kube-controller-manager "${BIN}/kube-controller-manager" \
  --kubeconfig "${STATE}/controller-manager.conf" \
  --authentication-kubeconfig "${STATE}/controller-manager.conf" \
  --authorization-kubeconfig "${STATE}/controller-manager.conf" \
  --bind-address 127.0.0.1 --leader-elect=false \
  --client-ca-file "${PKI}/ca.crt" --root-ca-file "${PKI}/ca.crt" \
  --cluster-signing-cert-file "${PKI}/ca.crt" --cluster-signing-key-file "${PKI}/ca.key" \
  --service-account-private-key-file "${PKI}/sa.key" --use-service-account-credentials=true \
  --service-cluster-ip-range "${SERVICE_CIDR}" --cluster-name "${NAME}" \
  --v 2 # logs when the garbage collector starts watching a resource (a CRD installed later)
start kube-scheduler "${BIN}/kube-scheduler" \
  --kubeconfig "${STATE}/scheduler.conf" \
  --authentication-kubeconfig "${STATE}/scheduler.conf" --authorization-kubeconfig "${STATE}/scheduler.conf" \
  --bind-address 127.0.0.1 --leader-elect=false

# --- container runtime ---
say "starting containerd, kube-proxy and the kubelet"
cat > "${STATE}/containerd/config.toml" <<EOF
version = 2
root = "${STATE}/containerd/root"
state = "${STATE}/containerd/state"
[grpc]
  address = "${CONTAINERD_SOCK}"
[plugins."io.containerd.internal.v1.opt"]
  path = "${STATE}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${SANDBOX_IMAGE}"
  # This machine's root may not lower a process's OOM score (no
  # CAP_SYS_RESOURCE); the kubelet asks for -998 for every sandbox.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${STATE}/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${STATE}/cni/net.d"
EOF
cat > "${STATE}/cni/net.d/10-${NAME}.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "${NAME}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${STATE}/cni/ipam",
        "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${POD_GATEWAY}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
start containerd containerd --config "${STATE}/containerd/config.toml"
wait_for "containerd to serve" 60 containerd ctr_node version

# The sandbox image, compiled from the pinned Kubernetes module's
# build/pause with that directory's own Dockerfile.
kdir="$(cd "${ROOT}/hack/tools" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
pause_ver="$(sed -n 's/^TAG ?= //p' "${kdir}/build/pause/Makefile")"
mkdir -p "${STATE}/image/bin"
gcc -Os -Wall -Werror -static -DVERSION="v${pause_ver}" -o "${STATE}/image/bin/pause-linux-amd64" \
  "${kdir}/build/pause/linux/pause.c"
"${ROOT}/hack/build-image.sh" -f "${kdir}/build/pause/Dockerfile" --build-arg BASE=scratch \
  --build-arg ARCH=amd64 -t "${SANDBOX_IMAGE}" -o "${STATE}/image/pause.tar" "${STATE}/image" >>"${LOGS}/image.log" 2>&1 ||
  die "building the pause image failed (${LOGS}/image.log)"
"${ROOT}/hack/node-load-image.sh" "${STATE}" "${STATE}/image/pause.tar" >>"${LOGS}/image.log" 2>&1 ||
  die "importing the pause image failed (${LOGS}/image.log)"

# --- kube-proxy and the kubelet ---
cat > "${STATE}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${STATE}/kube-proxy.conf
mode: iptables
hostnameOverride: ${NODE_NAME}
clusterCIDR: ${POD_CIDR}
bindAddress: ${NODE_IP}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# A network namespace other than the machine's may not change the
# conntrack table's size or timeouts: leave them as they are.
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
start kube-proxy "${BIN}/kube-proxy" --config "${STATE}/kube-proxy.yaml"

cat > "${STATE}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 and no systemd: the kubelet's own cgroupfs driver, under the
# node's cgroup.
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupRoot: ${CGROUP}
failSwapOn: false
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
address: ${NODE_IP}
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
podLogsDir: ${STATE}/pod-logs
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${PKI}/ca.crt
authorization:
  mode: Webhook
clusterDomain: cluster.local
# Images exist only in the node's runtime: never garbage-collect them, and
# never evict for the disk of a machine shared with other work.
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%"
  imagefs.available: "1%"
EOF
# The kubelet sets kernel parameters that no namespace confines
# (vm.overcommit_memory, kernel.panic, ...): node-down puts back the values
# it found.
sysctl -n vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes | paste -d= <(printf '%s\n' vm.overcommit_memory \
  vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes) - \
  > "${STATE}/sysctls"
start kubelet "${BIN}/kubelet" --config "${STATE}/kubelet.yaml" --kubeconfig "${STATE}/kubelet.conf" \
  --root-dir "${STATE}/kubelet" --cert-dir "${STATE}/kubelet/pki" \
  --hostname-override "${NODE_NAME}" --node-ip "${NODE_IP}"

wait_for "node ${NODE_NAME} to register" 120 kubelet kubectl get node "${NODE_NAME}"
wait_for "node ${NODE_NAME} to be Ready" 120 kubelet \
  kubectl wait --for=condition=Ready --timeout=2s node "${NODE_NAME}"
wait_for "the default ServiceAccount" 60 kube-controller-manager \
  kubectl get serviceaccount default --namespace default
trap - EXIT
say "node ${NODE_NAME} is Ready (Kubernetes $(kubectl version -o json | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | tail -1)); try:"
say "  hack/node-exec.sh ${STATE} bin/kubectl get nodes"
