#!/usr/bin/env bash
# Stops the one-node cluster that hack/node-up.sh STATE_DIR started, and
# removes exactly what it made: its processes (by PID, then whatever is left
# in the node's cgroup: containerd's shims and the containers), the mounts
# under STATE_DIR and the Pods' network namespaces, the node's network
# namespace, its cgroups, and the CNI results cached for its network.
# KEEP=1 keeps STATE_DIR (logs, certificates) for a look afterwards.
#
# Usage: hack/node-down.sh STATE_DIR
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: $0 STATE_DIR" >&2; exit 2; }
if [[ ! -f "$1/node.env" ]]; then
  echo ">> node: nothing to stop in $1" >&2
  exit 0
fi
STATE="$(cd "$1" && pwd)"
# shellcheck source=hack/lib/node.sh
source "${ROOT}/hack/lib/node.sh"
# shellcheck disable=SC1091
source "${STATE}/node.env"

# stop NAME stops a component node-up started: SIGTERM, then SIGKILL after
# 10 seconds. Only a process still leading the session it was started in,
# in the node's cgroup, is ours.
stop() {
  local pidfile="${PIDS}/$1.pid" pid
  [[ -f "${pidfile}" ]] || return 0
  pid="$(cat "${pidfile}")"
  if [[ -n "${pid}" && "$(ps -o sid= -p "${pid}" 2>/dev/null | tr -d ' ')" == "${pid}" ]] &&
    grep -q ":${CGROUP}/system$" "/proc/${pid}/cgroup" 2>/dev/null; then
    kill -TERM "${pid}" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "${pid}" 2>/dev/null || true
  fi
  rm -f "${pidfile}"
}

# cgroup_pids prints every process in the node's cgroup tree.
cgroup_pids() {
  local h
  h="$(cgroup_hierarchies | grep -m1 '/pids$' || cgroup_hierarchies | head -1)"
  [[ -d "${h}${CGROUP}" ]] || return 0
  find "${h}${CGROUP}" -name cgroup.procs -exec cat {} + 2>/dev/null
}

# The Pods' network namespaces: containerd mounts each under /run/netns;
# ours are those a process of the node's cgroup is in.
pod_netns=()
for pid in $(cgroup_pids); do
  ino="$(stat -L -c %i "/proc/${pid}/ns/net" 2>/dev/null)" || continue
  for ns in /run/netns/cni-*; do
    [[ -e "${ns}" && "$(stat -L -c %i "${ns}" 2>/dev/null)" == "${ino}" ]] && pod_netns+=("${ns}")
  done
done

# An OpenStack started in the node's network namespace (the e2e tests run
# hack/openstack-up.sh with OPENSTACK_DIR=STATE/openstack there).
if [[ -f "${STATE}/openstack/env" ]]; then
  OPENSTACK_DIR="${STATE}/openstack" "${ROOT}/hack/openstack-down.sh" || true
fi

# The kubelet first, so that it restarts nothing; then the rest.
for c in kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do
  stop "${c}"
done
# containerd's shims and the containers outlive containerd.
deadline=$((SECONDS + 30))
while [[ -n "$(cgroup_pids)" ]]; do
  # shellcheck disable=SC2046
  kill -KILL $(cgroup_pids) 2>/dev/null || true
  if ((SECONDS > deadline)); then
    echo "node-down: processes left in cgroup ${CGROUP}: $(cgroup_pids | tr '\n' ' ')" >&2
    break
  fi
  sleep 0.2
done

# Mounts: the kubelet's (its root dir, the Pods' volumes), containerd's
# (root filesystems, /dev/shm of sandboxes), deepest first.
for ns in "${pod_netns[@]}"; do
  umount "${ns}" 2>/dev/null || umount -l "${ns}" 2>/dev/null || true
  rm -f "${ns}"
done
while read -r m; do
  umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null ||
    echo "node-down: could not unmount ${m}" >&2
done < <(awk -v s="${STATE}/" 'index($5 "/", s) == 1 { print $5 }' /proc/self/mountinfo | tac)

if [[ -e "${NETNS}" ]]; then
  ip netns delete "${NAME}" || echo "node-down: could not delete network namespace ${NAME}" >&2
fi

# cgroups: every directory below the node's cgroup, deepest first, then the
# ones node-up made on the way to it.
# A cgroup v2 directory stays busy until its killed processes are reaped.
remove_cgroups() {
  local h ok=0
  while read -r h; do
    if [[ -d "${h}${CGROUP}" ]]; then
      find "${h}${CGROUP}" -depth -type d -exec rmdir {} + 2>/dev/null || ok=1
    fi
  done < <(cgroup_hierarchies)
  return "${ok}"
}
deadline=$((SECONDS + 30))
until remove_cgroups; do
  if ((SECONDS > deadline)); then
    echo "node-down: could not remove cgroup ${CGROUP} (in $(cgroup_hierarchies | tr '\n' ' '))" >&2
    break
  fi
  sleep 0.2
done
if [[ -f "${STATE}/cgroups" ]]; then
  tac "${STATE}/cgroups" | while read -r d; do
    [[ -d "${d}" ]] && { rmdir "${d}" 2>/dev/null || echo "node-down: could not remove cgroup ${d}" >&2; }
  done
fi

# The kernel parameters the kubelet set, as node-up found them.
if [[ -f "${STATE}/sysctls" ]]; then
  while IFS== read -r k v; do
    sysctl -qw "${k}=${v}" || echo "node-down: could not restore ${k}=${v}" >&2
  done < "${STATE}/sysctls"
fi

# What the runtime and the kubelet keep outside STATE: the shims' sockets
# (each task's bundle names its own), libcni's cache of results for the
# node's networks, the kubelet's links to container logs.
tasks="${STATE}/containerd/state/io.containerd.runtime.v2.task/k8s.io"
for id in $(ls "${tasks}" 2>/dev/null); do
  sock="$(sed -n 's|^unix://||p' "${tasks}/${id}/address" 2>/dev/null)"
  [[ "${sock}" == /run/containerd/s/* ]] && rm -f "${sock}"
  rm -f "/var/lib/cni/results/cni-loopback-${id}-lo"
done
rm -f /var/lib/cni/results/"${CNI_NETWORK}"-* 2>/dev/null || true
if [[ -d /var/log/containers ]]; then
  find /var/log/containers -maxdepth 1 -type l -lname "${STATE}/*" -delete 2>/dev/null || true
fi
# The directories node-up found missing: what is left in them is the
# node's own (the kubelet's device-plugin socket, libcni's lock), unless
# another node runs.
if [[ -f "${STATE}/made-outside" ]]; then
  while read -r d; do
    case "${d}" in
      "mount /run/netns")
        if mountpoint -q /run/netns && [[ -z "$(ls -A /run/netns)" ]]; then umount /run/netns; fi ;;
      *)
        rm -f "${d}/device-plugins/kubelet.sock" "${d}/net.d/cni.lock"
        [[ -d "${d}" ]] && find "${d}" -depth -type d -empty -delete ;;
    esac
  done < <(tac "${STATE}/made-outside")
fi

if [[ -z "${KEEP:-}" ]]; then
  rm -rf --one-file-system "${STATE}"
else
  rm -f "${STATE}/node.env"
fi
echo ">> node: ${NAME} stopped" >&2
