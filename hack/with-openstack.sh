#!/usr/bin/env bash
# Runs a command with the local OpenStack of hack/openstack-up.sh up and
# TEST_OPENSTACK_DIR pointing at it (the Neutron tests read it). It starts
# the OpenStack when it is not running and then stops it afterwards; one
# that was already running is used and left running.
#
# With --openrc the command also gets the OS_* variables of the openrc (the
# controller's user), as `source .run/openstack/openrc` would give it.
#
# Usage: hack/with-openstack.sh [--openrc] COMMAND [ARG...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export OPENSTACK_DIR="${OPENSTACK_DIR:-${ROOT}/.run/openstack}"
export TEST_OPENSTACK_DIR="${OPENSTACK_DIR}"

if ! "${ROOT}/hack/openstack-up.sh" --running; then
  start=${SECONDS}
  "${ROOT}/hack/openstack-up.sh"
  echo ">> openstack: ready in $((SECONDS - start)) s" >&2
  trap '"${ROOT}/hack/openstack-down.sh"' EXIT
fi
if [[ "${1:-}" == "--openrc" ]]; then
  shift
  # shellcheck disable=SC1091
  source "${OPENSTACK_DIR}/openrc"
  unset OS_CLOUD OS_CLIENT_CONFIG_FILE
  cat >&2 <<EOS
>> openstack: the network controller uses Neutron as ${OS_USERNAME} (project ${OS_PROJECT_NAME}); in another shell:
     source ${OPENSTACK_DIR}/openrc && openstack network list
EOS
fi
"$@"
