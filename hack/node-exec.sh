#!/usr/bin/env bash
# Runs a command in the network namespace of the node that
# hack/node-up.sh STATE_DIR started, in the caller's working directory, with
# KUBECONFIG set to the node's admin kubeconfig unless already set:
#
#   hack/node-exec.sh STATE_DIR bin/kubectl get nodes
#   hack/node-exec.sh STATE_DIR bash     # a shell that reaches the API server
#
# Only the network namespace is entered: the mounts, processes and files
# are this machine's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -ge 2 ]] || { echo "usage: $0 STATE_DIR COMMAND [ARG...]" >&2; exit 2; }
[[ -f "$1/node.env" ]] || { echo "node-exec: no node in $1 (hack/node-up.sh $1 starts one)" >&2; exit 1; }
STATE="$(cd "$1" && pwd)"
shift
# shellcheck source=hack/lib/node.sh
source "${ROOT}/hack/lib/node.sh"
export KUBECONFIG="${KUBECONFIG:-${STATE}/kubeconfig}"
exec nsenter --net="${NETNS}" -- "$@"
