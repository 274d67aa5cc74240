package fakeopenstack_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/fakeopenstack"
)

type client struct {
	t     *testing.T
	srv   *fakeopenstack.Server
	token string
}

func (c *client) do(method, path string, body any) (int, http.Header, map[string]any) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	url := path
	if !strings.HasPrefix(path, "http") {
		url = c.srv.URL + "/networking" + path
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			c.t.Fatalf("%s %s: %d, body is not JSON: %s", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, resp.Header, out
}

func passwordAuth(user, password string) map[string]any {
	return map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": user, "domain": map[string]any{"name": "Default"}, "password": password,
		}}},
		"scope": map[string]any{"project": map[string]any{"name": "demo", "domain": map[string]any{"name": "Default"}}},
	}}
}

func login(t *testing.T, srv *fakeopenstack.Server) *client {
	c := &client{t: t, srv: srv}
	status, header, body := c.do("POST", srv.AuthURL+"/auth/tokens", passwordAuth("admin", "secret"))
	if status != http.StatusCreated || header.Get("X-Subject-Token") == "" {
		t.Fatalf("POST /v3/auth/tokens = %d %v", status, body)
	}
	c.token = header.Get("X-Subject-Token")
	return c
}

func neutronErrorType(t *testing.T, body map[string]any) string {
	t.Helper()
	ne, ok := body["NeutronError"].(map[string]any)
	if !ok {
		t.Fatalf("no NeutronError in %v", body)
	}
	if _, ok := ne["message"].(string); !ok {
		t.Fatalf("NeutronError without message: %v", body)
	}
	return ne["type"].(string)
}

func TestKeystone(t *testing.T) {
	srv := fakeopenstack.NewForTest(t)
	c := &client{t: t, srv: srv}
	if status, _, body := c.do("POST", srv.AuthURL+"/auth/tokens", passwordAuth("admin", "wrong")); status != 401 ||
		body["error"].(map[string]any)["code"].(float64) != 401 {
		t.Fatalf("bad password: %d %v", status, body)
	}
	status, header, body := c.do("POST", srv.AuthURL+"/auth/tokens", passwordAuth("admin", "secret"))
	if status != 201 || header.Get("X-Subject-Token") == "" {
		t.Fatalf("login: %d %v", status, body)
	}
	token := body["token"].(map[string]any)
	exp, err := time.Parse(time.RFC3339Nano, token["expires_at"].(string))
	if err != nil || exp.Before(time.Now()) {
		t.Fatalf("expires_at %v: %v", token["expires_at"], err)
	}
	var networkURL string
	for _, e := range token["catalog"].([]any) {
		entry := e.(map[string]any)
		if entry["type"] == "network" {
			for _, ep := range entry["endpoints"].([]any) {
				ep := ep.(map[string]any)
				if ep["interface"] == "public" && ep["region_id"] == "RegionOne" {
					networkURL = ep["url"].(string)
				}
			}
		}
	}
	if networkURL != srv.URL+"/networking" {
		t.Fatalf("catalog network endpoint = %q", networkURL)
	}
	if status, _, body := c.do("GET", srv.URL+"/networking/", nil); status != 200 || body["versions"] == nil {
		t.Fatalf("neutron versions: %d %v", status, body)
	}
}

func TestNeutronNeedsAValidToken(t *testing.T) {
	srv := fakeopenstack.NewForTest(t)
	c := &client{t: t, srv: srv}
	if status, header, _ := c.do("GET", "/v2.0/networks", nil); status != 401 || !strings.HasPrefix(header.Get("WWW-Authenticate"), "Keystone uri=") {
		t.Fatalf("no token: %d", status)
	}
	c = login(t, srv)
	if status, _, _ := c.do("GET", "/v2.0/networks", nil); status != 200 {
		t.Fatalf("with a token: %d", status)
	}
	srv.ExpireTokens()
	if status, _, _ := c.do("GET", "/v2.0/networks", nil); status != 401 {
		t.Fatalf("expired token: %d", status)
	}
}

func TestNetworksSubnetsAndTags(t *testing.T) {
	srv := fakeopenstack.NewForTest(t)
	c := login(t, srv)

	status, _, body := c.do("POST", "/v2.0/networks", map[string]any{"network": map[string]any{"name": "n1", "tags": []string{"a", "b"}}})
	if status != 201 {
		t.Fatalf("create network: %d %v", status, body)
	}
	n1 := body["network"].(map[string]any)["id"].(string)
	status, _, body = c.do("POST", "/v2.0/networks", map[string]any{"network": map[string]any{"name": "n2", "bogus": 1}})
	if status != 400 || neutronErrorType(t, body) != "HTTPBadRequest" {
		t.Fatalf("unknown attribute: %d %v", status, body)
	}
	if status, _, body = c.do("GET", "/v2.0/networks/nope", nil); status != 404 || neutronErrorType(t, body) != "NetworkNotFound" {
		t.Fatalf("missing network: %d %v", status, body)
	}

	subnet := func(cidr string, gw any) (int, map[string]any) {
		s := map[string]any{"network_id": n1, "cidr": cidr, "ip_version": 4}
		if gw != "omit" {
			s["gateway_ip"] = gw
		}
		status, _, body := c.do("POST", "/v2.0/subnets", map[string]any{"subnet": s})
		return status, body
	}
	if status, body = subnet("10.0.0.1/24", "10.0.0.2"); status != 400 || !strings.Contains(body["NeutronError"].(map[string]any)["message"].(string), "'10.0.0.0/24' is recommended") {
		t.Fatalf("host bits: %d %v", status, body)
	}
	status, body = subnet("10.0.0.0/24", "omit")
	if status != 201 || body["subnet"].(map[string]any)["gateway_ip"] != "10.0.0.1" {
		t.Fatalf("create subnet: %d %v", status, body)
	}
	s1 := body["subnet"].(map[string]any)["id"].(string)
	if status, body = subnet("10.0.0.128/25", "10.0.0.129"); status != 400 || neutronErrorType(t, body) != "InvalidInput" {
		t.Fatalf("overlapping subnet: %d %v", status, body)
	}

	if status, _, body = c.do("PUT", "/v2.0/subnets/"+s1, map[string]any{"subnet": map[string]any{"gateway_ip": "10.0.0.254"}}); status != 200 ||
		body["subnet"].(map[string]any)["gateway_ip"] != "10.0.0.254" {
		t.Fatalf("update gateway: %d %v", status, body)
	}
	if status, _, body = c.do("PUT", "/v2.0/subnets/"+s1, map[string]any{"subnet": map[string]any{"cidr": "10.1.0.0/24"}}); status != 400 {
		t.Fatalf("update cidr: %d %v", status, body)
	}

	if status, _, body = c.do("PUT", "/v2.0/subnets/"+s1+"/tags", map[string]any{"tags": []string{"k8s-network-uid=x", "managed-by=me"}}); status != 200 {
		t.Fatalf("replace tags: %d %v", status, body)
	}
	if status, _, _ = c.do("PUT", "/v2.0/networks/"+n1+"/tags/c", nil); status != 201 {
		t.Fatalf("add tag: %d", status)
	}
	if status, _, _ = c.do("GET", "/v2.0/networks/"+n1+"/tags/c", nil); status != 204 {
		t.Fatalf("check tag: %d", status)
	}
	if status, _, _ = c.do("DELETE", "/v2.0/networks/"+n1+"/tags/zz", nil); status != 404 {
		t.Fatalf("delete missing tag: %d", status)
	}

	count := func(path string) int {
		status, _, body := c.do("GET", path, nil)
		if status != 200 {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		for k, v := range body {
			if !strings.HasSuffix(k, "_links") {
				return len(v.([]any))
			}
		}
		return -1
	}
	for path, want := range map[string]int{
		"/v2.0/networks?tags=a,b":                           1,
		"/v2.0/networks?tags=a&tags=z":                      0,
		"/v2.0/networks?tags-any=z,c":                       1,
		"/v2.0/networks?not-tags=a":                         0,
		"/v2.0/networks?name=n1":                            1,
		"/v2.0/networks?name=n2&name=n1":                    1,
		"/v2.0/networks?name=other":                         0,
		"/v2.0/subnets?network_id=" + n1:                    1,
		"/v2.0/subnets?tags=managed-by%3Dme":                1,
		"/v2.0/subnets?tags=managed-by%3Dme&cidr=1.0.0.0/8": 0,
		"/v2.0/subnets?ip_version=4":                        1,
	} {
		if got := count(path); got != want {
			t.Errorf("GET %s: %d items, want %d", path, got, want)
		}
	}
	if status, _, _ = c.do("GET", "/v2.0/networks?color=blue", nil); status != 400 {
		t.Errorf("unknown filter: %d", status)
	}

	if status, _, body = c.do("DELETE", "/v2.0/networks/"+n1, nil); status != 409 || neutronErrorType(t, body) != "NetworkInUse" {
		t.Fatalf("delete network with a subnet: %d %v", status, body)
	}
	if status, _, _ = c.do("DELETE", "/v2.0/subnets/"+s1, nil); status != 204 {
		t.Fatalf("delete subnet: %d", status)
	}
	if status, _, _ = c.do("DELETE", "/v2.0/networks/"+n1, nil); status != 204 {
		t.Fatalf("delete network: %d", status)
	}
	if status, _, body = c.do("DELETE", "/v2.0/networks/"+n1, nil); status != 404 || neutronErrorType(t, body) != "NetworkNotFound" {
		t.Fatalf("delete deleted network: %d %v", status, body)
	}
	if srv.Count("DELETE /v2.0/networks/{id}") != 3 || srv.Count("POST /v2.0/subnets") != 3 {
		t.Fatalf("counts = %v", srv.Counts())
	}
	// The deleted network stays in the history of creates.
	if created := srv.CreatedNetworks(); len(created) == 0 || created[0].ID != n1 {
		t.Errorf("CreatedNetworks() = %+v, want the deleted network %s first", created, n1)
	}
}

func TestPaging(t *testing.T) {
	srv := fakeopenstack.NewForTest(t)
	for i := range 5 {
		srv.AddNetwork("n"+string(rune('0'+i)), "")
	}
	c := login(t, srv)
	var names []string
	path := "/v2.0/networks?limit=2"
	for path != "" {
		status, _, body := c.do("GET", path, nil)
		if status != 200 {
			t.Fatalf("GET %s: %d", path, status)
		}
		for _, n := range body["networks"].([]any) {
			names = append(names, n.(map[string]any)["name"].(string))
		}
		path = ""
		if links, ok := body["networks_links"].([]any); ok {
			path = links[0].(map[string]any)["href"].(string)
		}
	}
	if strings.Join(names, ",") != "n0,n1,n2,n3,n4" {
		t.Fatalf("paged names = %v", names)
	}
}

func TestFaults(t *testing.T) {
	srv := fakeopenstack.NewForTest(t)
	c := login(t, srv)
	srv.FailNext(2, 503)
	for range 2 {
		if status, _, body := c.do("GET", "/v2.0/networks", nil); status != 503 || body["NeutronError"] == nil {
			t.Fatalf("FailNext: %d %v", status, body)
		}
	}
	if status, _, _ := c.do("GET", "/v2.0/networks", nil); status != 200 {
		t.Fatalf("after FailNext: %d", status)
	}
	srv.FailRoute("GET /v2.0/subnets", 500, -1)
	for range 3 {
		if status, _, _ := c.do("GET", "/v2.0/subnets", nil); status != 500 {
			t.Fatalf("FailRoute: %d", status)
		}
	}
	srv.ClearFaults()
	if status, _, _ := c.do("GET", "/v2.0/subnets", nil); status != 200 {
		t.Fatalf("after ClearFaults: %d", status)
	}
	srv.SetDown(true)
	if _, err := srv.Client().Get(srv.URL + "/networking/v2.0/networks"); err == nil {
		t.Fatal("a request to a down server succeeded")
	}
	srv.SetDown(false)
	srv.SetLatency(50 * time.Millisecond)
	start := time.Now()
	c.do("GET", "/v2.0/networks", nil)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("latency: request took %v", d)
	}
}
