#!/usr/bin/env bash
# Starts a real OpenStack identity and network API on this machine: Keystone
# and Neutron from Debian's packages (OpenStack Zed on bookworm), on 127.0.0.1
# (or OPENSTACK_HOST, an address of the network namespace it runs in: the e2e
# tests run it in the node's, where Pods reach it), with SQLite databases and
# no agents, as plain background processes.
#
#   hack/openstack-up.sh      install (when missing), configure, start, wait
#   hack/openstack-down.sh    stop what this script started
#
# Everything lives in the state directory OPENSTACK_DIR (default .run/openstack):
#   openrc          OS_* variables of the controller's user (member role only
#                   in project k8s): `source` it, then `openstack network list`
#   openrc-admin    the cloud admin's OS_* variables
#   clouds.yaml     clouds "local" (the controller's user) and "local-admin";
#                   use with OS_CLIENT_CONFIG_FILE=<dir>/clouds.yaml OS_CLOUD=local
#   env             KEYSTONE_URL, NEUTRON_URL, PROJECT_ID, ... for tests
#   *.log           the servers' logs; *.pid their process IDs. neutron-server.log
#                   holds Neutron's access log: one neutron.wsgi line per
#                   request with the caller's user and project IDs, what
#                   tests and the bench count Neutron requests with
#
# It is idempotent: when the servers of OPENSTACK_DIR already answer, it
# prints so and exits 0 ("already running"). `--running` only tells: exit 0
# when they answer, 1 otherwise. Installing needs root (apt-get);
# package scripts are kept from starting system services, and no running
# system service is touched: the servers listen on free loopback ports and
# run from OPENSTACK_DIR's configuration only.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${OPENSTACK_DIR:-${ROOT}/.run/openstack}"
HOST="${OPENSTACK_HOST:-127.0.0.1}"
# Debian's Python: the OpenStack packages are installed for it, whatever
# python3 comes first in PATH.
PY=/usr/bin/python3
PACKAGES=(keystone neutron-server python3-openstackclient uwsgi-plugin-python3)
ADMIN_PASSWORD=admin-secret
SERVICE_PASSWORD=neutron-secret
CONTROLLER_USER=k8s-controller
CONTROLLER_PASSWORD=controller-secret
PROJECT=k8s
REGION=RegionOne

say() { echo ">> openstack: $*" >&2; }
die() { echo "openstack-up: $*" >&2; exit 1; }

answers() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

running() {
  [[ -f "${DIR}/env" ]] || return 1
  # shellcheck disable=SC1091
  source "${DIR}/env"
  answers "${KEYSTONE_URL}/v3" && answers "${NEUTRON_URL}/"
}
if [[ "${1:-}" == "--running" ]]; then
  running
  exit
fi
if running; then
  say "already running (state in ${DIR})"
  exit 0
fi
if [[ -f "${DIR}/env" ]]; then
  say "a previous run in ${DIR} is not answering; stopping what is left of it"
  "${ROOT}/hack/openstack-down.sh" >/dev/null 2>&1 || true
fi

# --- packages ---
installed() {
  [[ -x /usr/bin/keystone-manage && -x /usr/bin/neutron-server && -x /usr/bin/openstack &&
     -x /usr/bin/neutron-db-manage && -x /usr/bin/uwsgi && -x /usr/bin/keystone-wsgi-public ]] &&
    ls /usr/lib/uwsgi/plugins/python3*_plugin.so >/dev/null 2>&1
}
if ! installed; then
  # shellcheck source=hack/lib/install.sh
  source "${ROOT}/hack/lib/install.sh"
  say "installing takes a minute or two (about 230 packages)"
  install_packages openstack-up "${TMPDIR:-/tmp}/openstack-apt.log" "${PACKAGES[@]}" || exit 1
  installed || die "packages installed but a binary is missing"
  say "installed"
fi

# --- state directory and ports ---
rm -rf "${DIR}"
mkdir -p "${DIR}"/{fernet-keys,credential-keys,neutron,lock}
chmod 700 "${DIR}/fernet-keys" "${DIR}/credential-keys"
read -r KEYSTONE_PORT NEUTRON_PORT < <("${PY}" - "${HOST}" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind((sys.argv[1], 0))
print(*[s.getsockname()[1] for s in socks])
EOF
)
KEYSTONE_URL="http://${HOST}:${KEYSTONE_PORT}"
NEUTRON_URL="http://${HOST}:${NEUTRON_PORT}"

# --- Keystone ---
say "configuring Keystone (${KEYSTONE_URL})"
cat > "${DIR}/keystone.conf" <<EOF
[DEFAULT]
log_file = ${DIR}/keystone.log
use_stderr = false
[database]
connection = sqlite:///${DIR}/keystone.db
[token]
provider = fernet
[fernet_tokens]
key_repository = ${DIR}/fernet-keys
[credential]
key_repository = ${DIR}/credential-keys
[cache]
enabled = false
[identity]
# bcrypt's minimum cost: a test cloud authenticates often, and the default
# cost makes every authentication take a core for a noticeable while.
password_hash_rounds = 4
EOF
km() { keystone-manage --config-file "${DIR}/keystone.conf" "$@" >>"${DIR}/keystone-manage.log" 2>&1; }
km db_sync || die "keystone-manage db_sync failed (${DIR}/keystone-manage.log)"
# uwsgi's processes share the SQLite file: WAL lets readers and the writer
# go on together instead of failing with "database is locked".
"${PY}" -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' "${DIR}/keystone.db"
km fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
km credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)"
km bootstrap --bootstrap-password "${ADMIN_PASSWORD}" \
  --bootstrap-admin-url "${KEYSTONE_URL}/v3/" --bootstrap-internal-url "${KEYSTONE_URL}/v3/" \
  --bootstrap-public-url "${KEYSTONE_URL}/v3/" --bootstrap-region-id "${REGION}" ||
  die "keystone-manage bootstrap failed (${DIR}/keystone-manage.log)"

say "starting Keystone"
OS_KEYSTONE_CONFIG_FILES="${DIR}/keystone.conf" setsid uwsgi --plugins python3 \
  --http-socket "${HOST}:${KEYSTONE_PORT}" --wsgi-file /usr/bin/keystone-wsgi-public \
  --master --processes 2 --threads 8 --lazy-apps --die-on-term --no-orphans --buffer-size 65535 \
  --add-header "Connection: close" --pidfile "${DIR}/keystone.pid" --logto "${DIR}/keystone-uwsgi.log" </dev/null >/dev/null 2>&1 &

wait_for() { # NAME URL SECONDS LOG
  local deadline=$((SECONDS + $3))
  until answers "$2"; do
    if ((SECONDS >= deadline)); then
      tail -30 "$4" >&2 || true
      die "$1 did not answer at $2 within $3 s (log: $4)"
    fi
    sleep 0.5
  done
}
wait_for Keystone "${KEYSTONE_URL}/v3" 60 "${DIR}/keystone-uwsgi.log"

# --- users, project, catalog ---
cat > "${DIR}/openrc-admin" <<EOF
# The cloud admin of the local OpenStack started by hack/openstack-up.sh.
export OS_AUTH_URL=${KEYSTONE_URL}/v3
export OS_IDENTITY_API_VERSION=3
export OS_USERNAME=admin
export OS_PASSWORD=${ADMIN_PASSWORD}
export OS_PROJECT_NAME=admin
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_REGION_NAME=${REGION}
export OS_INTERFACE=public
EOF
say "creating the service project, the neutron service user, project ${PROJECT} and its member user ${CONTROLLER_USER}"
ids="$(KEYSTONE_URL="${KEYSTONE_URL}" NEUTRON_URL="${NEUTRON_URL}" ADMIN_PASSWORD="${ADMIN_PASSWORD}" \
  SERVICE_PASSWORD="${SERVICE_PASSWORD}" CONTROLLER_USER="${CONTROLLER_USER}" \
  CONTROLLER_PASSWORD="${CONTROLLER_PASSWORD}" PROJECT="${PROJECT}" REGION="${REGION}" \
  "${PY}" "${ROOT}/hack/openstack-identity.py" 2>>"${DIR}/keystone-manage.log")" ||
  die "creating Keystone's users, projects and catalog failed (${DIR}/keystone-manage.log)"
read -r PROJECT_ID ADMIN_PROJECT_ID <<<"${ids}"

# --- Neutron ---
say "configuring Neutron (${NEUTRON_URL})"
cat > "${DIR}/neutron.conf" <<EOF
[DEFAULT]
bind_host = ${HOST}
bind_port = ${NEUTRON_PORT}
core_plugin = ml2
# The L3 router plugin serves the router API (routers, router interfaces)
# from the database; with no L3 agent nothing is wired, which the
# controller's tests do not need: they check what Neutron records.
service_plugins = router
auth_strategy = keystone
transport_url = fake:/
state_path = ${DIR}/neutron
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
log_file = ${DIR}/neutron-server.log
use_stderr = false
[database]
connection = sqlite:///${DIR}/neutron.db
[keystone_authtoken]
www_authenticate_uri = ${KEYSTONE_URL}
auth_url = ${KEYSTONE_URL}
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = neutron
password = ${SERVICE_PASSWORD}
region_name = ${REGION}
# Validated tokens are trusted for seconds, not the default 5 minutes: a
# token Keystone revoked (a password changed, a user disabled) is refused
# at once, as the fault tests of refused credentials need.
token_cache_time = 5
[oslo_concurrency]
lock_path = ${DIR}/lock
[ml2]
type_drivers = flat,vlan,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
[ml2_type_vxlan]
vni_ranges = 1:100000
[quotas]
quota_network = -1
quota_subnet = -1
quota_port = -1
EOF
# Neutron's alembic migrations do not run on SQLite: create the schema from
# the models (as Neutron's unit tests do), then stamp it as migrated.
"${PY}" - "${DIR}/neutron.db" >>"${DIR}/neutron-db.log" 2>&1 <<'EOF' || die "creating Neutron's schema failed (${DIR}/neutron-db.log)"
import sqlite3, sys
import sqlalchemy
from neutron.db.migration.models import head
engine = sqlalchemy.create_engine("sqlite:///" + sys.argv[1])
head.get_metadata().create_all(engine)
sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")
EOF
neutron-db-manage --config-file "${DIR}/neutron.conf" stamp heads >>"${DIR}/neutron-db.log" 2>&1 ||
  die "neutron-db-manage stamp failed (${DIR}/neutron-db.log)"

say "starting Neutron"
setsid neutron-server --config-file "${DIR}/neutron.conf" </dev/null >"${DIR}/neutron-server.out" 2>&1 &
echo $! > "${DIR}/neutron.pid"
wait_for Neutron "${NEUTRON_URL}/" 90 "${DIR}/neutron-server.log"

# --- client configuration ---
cat > "${DIR}/openrc" <<EOF
# The controller's user of the local OpenStack started by hack/openstack-up.sh:
# role member in project ${PROJECT} only.
export OS_AUTH_URL=${KEYSTONE_URL}/v3
export OS_IDENTITY_API_VERSION=3
export OS_USERNAME=${CONTROLLER_USER}
export OS_PASSWORD=${CONTROLLER_PASSWORD}
export OS_PROJECT_NAME=${PROJECT}
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_REGION_NAME=${REGION}
export OS_INTERFACE=public
EOF
cat > "${DIR}/clouds.yaml" <<EOF
clouds:
  local:
    auth:
      auth_url: ${KEYSTONE_URL}/v3
      username: ${CONTROLLER_USER}
      password: ${CONTROLLER_PASSWORD}
      project_name: ${PROJECT}
      user_domain_name: Default
      project_domain_name: Default
    region_name: ${REGION}
    interface: public
    identity_api_version: 3
  local-admin:
    auth:
      auth_url: ${KEYSTONE_URL}/v3
      username: admin
      password: ${ADMIN_PASSWORD}
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: ${REGION}
    interface: public
    identity_api_version: 3
EOF
cat > "${DIR}/env" <<EOF
KEYSTONE_URL=${KEYSTONE_URL}
NEUTRON_URL=${NEUTRON_URL}
PROJECT_NAME=${PROJECT}
PROJECT_ID=${PROJECT_ID}
ADMIN_PROJECT_ID=${ADMIN_PROJECT_ID}
EOF

# A last check through the public API as the controller's user: networks
# and the router plugin's API answer.
(unset OS_CLOUD OS_CLIENT_CONFIG_FILE; source "${DIR}/openrc"; openstack network list -f value >/dev/null &&
  openstack router list -f value >/dev/null) ||
  die "the controller's user cannot list networks or routers (logs in ${DIR})"
say "up: Keystone ${KEYSTONE_URL}, Neutron ${NEUTRON_URL}; state in ${DIR}"
say "use it: source ${DIR}/openrc && openstack network list"
