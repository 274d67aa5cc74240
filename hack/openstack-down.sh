#!/usr/bin/env bash
# Stops the Keystone and Neutron that hack/openstack-up.sh started from
# OPENSTACK_DIR (default .run/openstack), and nothing else: each runs in its
# own session whose ID is in <name>.pid, and only those sessions are signalled.
# KEEP=1 keeps the state directory (logs, databases) for a look afterwards.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${OPENSTACK_DIR:-${ROOT}/.run/openstack}"

stop() { # NAME
  local pidfile="${DIR}/$1.pid" pid
  [[ -f "${pidfile}" ]] || return 0
  pid="$(cat "${pidfile}")"
  # Only a process that still leads the session it was started in is ours.
  if [[ -n "${pid}" && "$(ps -o sid= -p "${pid}" 2>/dev/null | tr -d ' ')" == "${pid}" ]]; then
    kill -TERM -- "-${pid}" 2>/dev/null || true
    for _ in $(seq 1 50); do
      pgrep -s "${pid}" >/dev/null || break
      sleep 0.2
    done
    if pgrep -s "${pid}" >/dev/null; then
      kill -KILL -- "-${pid}" 2>/dev/null || true
    fi
    echo ">> openstack: stopped $1 (session ${pid})" >&2
  fi
  rm -f "${pidfile}"
}

stop neutron
stop keystone
if [[ -z "${KEEP:-}" && -d "${DIR}" ]]; then
  rm -rf "${DIR}"
fi
