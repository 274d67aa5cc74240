# Shared by hack/node-*.sh: the layout of a one-node cluster's state
# directory and the names derived from it. Source it with STATE set to the
# state directory's absolute path.

# Addresses, all from documentation ranges (RFC 5737), and all inside the
# node's private network namespace.
NODE_IP=198.51.100.2         # the node and the API server (on the namespace's lo)
POD_CIDR=203.0.113.0/24      # Pods (bridge + host-local)
POD_GATEWAY=203.0.113.1      # the bridge's address
SERVICE_CIDR=192.0.2.0/24    # Service cluster IPs (kube-proxy, iptables)
API_PORT=6443

# The names of what node-up makes outside STATE: the network namespace
# (/run/netns/NAME), the cgroup everything runs in, and the CNI network.
# They derive from STATE, so two state directories make two nodes.
NAME="kube-node-$(printf '%s' "${STATE}" | sha256sum | cut -c1-8)"
NODE_NAME="${NAME}"
NETNS="/run/netns/${NAME}"
SANDBOX_IMAGE="localhost/pause:3.10.2"

LOGS="${STATE}/logs"
PIDS="${STATE}/pids"
PKI="${STATE}/pki"
CONTAINERD_SOCK="${STATE}/containerd/containerd.sock"

# in_node CMD... runs CMD in the node's network namespace only: entering its
# mount namespace too (as `ip netns exec` does) would hide the cgroup mounts
# from kubelet and runc.
in_node() { nsenter --net="${NETNS}" -- "$@"; }

# cgroup_hierarchies prints the mount point of every cgroup hierarchy: the
# v1 ones, and on a hybrid machine the v2 one, where runc makes cgroups too.
cgroup_hierarchies() {
  awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts
}

# ctr_node ARGS... runs containerd's ctr against the node's containerd, in
# the namespace the CRI plugin (so the kubelet) uses.
ctr_node() { ctr --address "${CONTAINERD_SOCK}" --namespace k8s.io "$@"; }
