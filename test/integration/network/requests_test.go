package network

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
)

// The request budgets, counted in Neutron's own access log.
const (
	// maxRequestsPerCreate: the network, its tags, the subnet, its tags.
	// A new Network needs no lookup of what an earlier attempt left: there
	// was none before its finalizer went on.
	maxRequestsPerCreate = 4
	// maxRequestsPerRecreate: a Network with the finalizer whose backend
	// network went: the lookup, the GET of the network its status
	// records (gone, not under another managed-by value), then the four
	// of a create.
	maxRequestsPerRecreate = 2 + maxRequestsPerCreate
	// scanRequests: a List of fewer Networks than a page is one request
	// for the networks and one for the subnets.
	scanRequests = 2
)

// neutronUserEnv is neutronEnv with a Keystone user of the test's own, so
// that the requests Neutron logs for it are the manager's alone.
func neutronUserEnv(t *testing.T) (*env, *neutrontest.Cloud, string, *neutrontest.User) {
	e, cloud, managedBy := neutronEnv(t)
	user := cloud.User(t)
	for k, v := range user.Env {
		t.Setenv(k, v)
	}
	return e, cloud, managedBy, user
}

// requests returns what Neutron logged for user since log's mark, with the
// paths unescaped.
func requests(t *testing.T, log *neutrontest.AccessLog, user *neutrontest.User) []neutrontest.Request {
	t.Helper()
	reqs, err := log.Requests(context.Background(), user.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if p, err := url.QueryUnescape(reqs[i].Path); err == nil {
			reqs[i].Path = p
		}
	}
	return reqs
}

// checkFiltered fails t for a list request without a filter that names
// what it looks for (tags, a name, IDs): the backend never lists the whole
// project.
func checkFiltered(t *testing.T, reqs []neutrontest.Request) {
	t.Helper()
	for _, r := range reqs {
		if r.Method != "GET" || strings.Count(r.Path, "/") > 2 {
			continue // not a list (a GET of one object has its ID in the path)
		}
		if !strings.Contains(r.Path, "tags=") && !strings.Contains(r.Path, "name=") && !strings.Contains(r.Path, "id=") {
			t.Errorf("%s lists the whole project", r)
		}
	}
}
