"""Creates what hack/openstack-up.sh's cloud needs in a bootstrapped Keystone.

The service project and Neutron's service user (role admin in it), the
controller's project and its user (role member only), and the network
service with its endpoints. Prints the IDs of the controller's project and
of the admin project. One interpreter for every call: the openstack CLI
would start one per call, seconds apiece. Run by Debian's /usr/bin/python3.
"""
import os

from keystoneauth1 import session
from keystoneauth1.identity import v3

e = os.environ
api = e["KEYSTONE_URL"] + "/v3"
s = session.Session(auth=v3.Password(
    auth_url=api, username="admin", password=e["ADMIN_PASSWORD"],
    project_name="admin", user_domain_id="default", project_domain_id="default"))


def create(path, key, body):
    return s.post(api + path, json={key: body}).json()[key]["id"]


def find(path, key, name):
    return s.get(api + path, params={"name": name}).json()[key][0]["id"]


def grant(project, user, role):
    s.put(api + "/projects/%s/users/%s/roles/%s" % (project, user, find("/roles", "roles", role)))


service = create("/projects", "project", {"name": "service", "domain_id": "default"})
neutron = create("/users", "user", {"name": "neutron", "password": e["SERVICE_PASSWORD"], "domain_id": "default"})
grant(service, neutron, "admin")
project = create("/projects", "project", {"name": e["PROJECT"], "domain_id": "default",
                                          "description": "Kubernetes Networks"})
user = create("/users", "user", {"name": e["CONTROLLER_USER"], "password": e["CONTROLLER_PASSWORD"],
                                 "domain_id": "default"})
grant(project, user, "member")
svc = create("/services", "service", {"name": "neutron", "type": "network", "description": "OpenStack Networking"})
for iface in ("public", "internal", "admin"):
    create("/endpoints", "endpoint", {"service_id": svc, "interface": iface, "url": e["NEUTRON_URL"],
                                      "region_id": e["REGION"]})
print(project, find("/projects", "projects", "admin"))
