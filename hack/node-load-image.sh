#!/usr/bin/env bash
# Imports an OCI image archive (as `make image` writes it) into the
# containerd of the node that hack/node-up.sh STATE_DIR started, under the
# name the archive carries, where the kubelet finds it: a Pod naming that
# image with imagePullPolicy IfNotPresent (or Never) runs it without a pull.
#
# Usage: hack/node-load-image.sh STATE_DIR ARCHIVE
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 2 ]] || { echo "usage: $0 STATE_DIR ARCHIVE" >&2; exit 2; }
[[ -f "$1/node.env" ]] || { echo "node-load-image: no node in $1 (hack/node-up.sh $1 starts one)" >&2; exit 1; }
[[ -f "$2" ]] || { echo "node-load-image: no archive $2 (make image writes one)" >&2; exit 1; }
STATE="$(cd "$1" && pwd)"
# shellcheck source=hack/lib/node.sh
source "${ROOT}/hack/lib/node.sh"
ctr_node images import "$2"
