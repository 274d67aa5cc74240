package neutron

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// The filters of Observe repeat id= (network_id=) once per ID, as Neutron
// takes several values of one filter, and a full batch's request line, with
// the marker of a next page, stays well inside the 8 KiB servers and
// proxies commonly allow.
func TestObserveQueriesRepeatIDsAndStayShort(t *testing.T) {
	ids := make([]string, idsPerRequest)
	for i := range ids {
		ids[i] = string(uuid.NewUUID())
	}
	nets, err := byIDs{IDs: ids, Limit: DefaultPageSize}.ToNetworkListQuery()
	if err != nil {
		t.Fatal(err)
	}
	subs, err := byNetworkIDs{NetworkIDs: ids, Limit: DefaultPageSize}.ToSubnetListQuery()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct{ path, query, key string }{{"/v2.0/networks", nets, "id="}, {"/v2.0/subnets", subs, "network_id="}} {
		for _, id := range ids {
			if !strings.Contains(q.query, q.key+id) {
				t.Fatalf("%s%s lacks %s%s", q.path, q.query, q.key, id)
			}
		}
		line := "GET " + q.path + q.query + "&marker=" + ids[0] + " HTTP/1.1"
		t.Logf("a full batch's request line: %d bytes", len(line))
		if len(line) > 6*1024 {
			t.Errorf("a request line of %d bytes for %d IDs, want at most 6 KiB", len(line), len(ids))
		}
	}
}
