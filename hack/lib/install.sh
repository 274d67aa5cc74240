# Shared by hack/*.sh: installs Debian packages the project runs but does not
# build (containerd, buildah, Keystone, ...), when a command is missing.

# install_packages WHAT LOG PACKAGE... installs PACKAGEs with apt-get as root,
# its output in LOG; package scripts are kept from starting system services
# (a policy-rc.d that refuses, unless one exists). WHAT names the caller in
# messages. Fails, with LOG's tail, when it cannot.
install_packages() {
  local what="$1" log="$2"; shift 2
  if [[ "$(id -u)" != 0 ]]; then
    echo "${what}: needs Debian packages that are not installed, and this is not root: run as root, or: sudo apt-get install $*" >&2
    return 1
  fi
  echo ">> ${what}: installing $* from Debian" >&2
  local created_policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=1
  fi
  local rc=0
  { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; } >"${log}" 2>&1 || rc=$?
  [[ -n "${created_policy}" ]] && rm -f /usr/sbin/policy-rc.d
  if [[ ${rc} -ne 0 ]]; then
    tail -20 "${log}" >&2
    echo "${what}: apt-get install failed (log: ${log})" >&2
    return 1
  fi
}
