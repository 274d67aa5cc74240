package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// nginxDocs is where ingress-nginx documents its annotations; each row
// below cites its section.
const nginxDocs = "https://kubernetes.github.io/ingress-nginx/user-guide/nginx-configuration/annotations/"

// answer is what a request must get: a redirect (Status, Location, from
// Traefik) or the backend's answer (Status 200, and the Path, Host and
// X-Forwarded-Prefix the backend received).
type answer struct {
	Status   int
	Location string
	Path     string
	Host     string
	Prefix   []string
	Query    string
}

// answerOf is the part of r, the answer to a request for reqURL, that
// answer compares, its Location resolved against reqURL: Traefik answers a
// redirect that keeps the request's scheme with a network-path reference
// ("//host/path", RFC 3986 4.2), which a client resolves to the URL
// ingress-nginx writes out ("http://host/path").
func answerOf(r dataplane.Response, reqURL string) answer {
	loc := r.Location
	if loc != "" {
		if base, err := url.Parse(reqURL); err == nil {
			if ref, err := url.Parse(loc); err == nil {
				loc = base.ResolveReference(ref).String()
			}
		}
	}
	return answer{Status: r.Status, Location: loc, Path: r.Path, Host: r.Host, Prefix: r.ForwardedPrefix, Query: r.Query}
}

// nginxRow is a Service whose ingress/annotations hold ingress-nginx keys
// of one row of the translation table, and the answers ingress-nginx's
// documentation gives to requests (path -> answer) for them.
type nginxRow struct {
	name, doc string
	ann       map[string]string
	// path is the Service's ingress/path ("": /).
	path string
	want map[string]answer
	// queryKept are requests with a query string whose redirect keeps it
	// on the Gateway, where ingress-nginx's Location is the target alone:
	// a difference the Gateway API cannot avoid (a RequestRedirect has no
	// field for the query), which the translation table states. Pinned so
	// that a change of either side shows.
	queryKept map[string]answer
}

// nginxRows are the rows whose rendering Traefik's Gateway provider
// implements (its GatewayClass lists HTTPRouteSchemeRedirect,
// HTTPRoutePathRedirect, HTTPRoutePortRedirect, HTTPRouteHostRewrite,
// HTTPRoutePathRewrite; not the 303, 307 and 308 redirect codes), each
// with the answers ingress-nginx's documentation gives.
func nginxRows(e *env) []nginxRow {
	backend := func(name, path string, prefix ...string) answer {
		return answer{Status: 200, Path: path, Host: e.host(name), Prefix: prefix}
	}
	return []nginxRow{{
		// "return a permanent redirect (Return Code 301) instead of
		// sending data to the upstream": every path, Location the URL.
		name: "perm", doc: nginxDocs + "#permanent-redirect",
		ann: map[string]string{"permanent-redirect": "https://new.example.org/landing"},
		want: map[string]answer{
			"/":      {Status: 301, Location: "https://new.example.org/landing"},
			"/a/b/c": {Status: 301, Location: "https://new.example.org/landing"},
		},
		queryKept: map[string]answer{"/q?x=1": {Status: 301, Location: "https://new.example.org/landing?x=1"}},
	}, {
		// The documentation's own example, a URL without a path
		// ("https://www.google.com would redirect everything to Google"):
		// nginx writes the URL as given, the route's ReplaceFullPath is
		// "/", the same URL (RFC 3986 6.2.3: an empty http(s) path is "/").
		name: "permroot", doc: nginxDocs + "#permanent-redirect",
		ann:  map[string]string{"permanent-redirect": "https://new.example.org"},
		want: map[string]answer{"/a": {Status: 301, Location: "https://new.example.org/"}},
	}, {
		// "permanent-redirect-code ... modify the status code used for
		// permanent redirects" (302 is a code of the Gateway API core).
		name: "permcode", doc: nginxDocs + "#permanent-redirect-code",
		ann:  map[string]string{"permanent-redirect": "https://new.example.org/x", "permanent-redirect-code": "302"},
		want: map[string]answer{"/y": {Status: 302, Location: "https://new.example.org/x"}},
	}, {
		// "return a temporal redirect (Return Code 302) instead of sending
		// data to the upstream", the URL's port kept.
		name: "temp", doc: nginxDocs + "#temporal-redirect",
		ann:  map[string]string{"temporal-redirect": "http://new.example.org:8080/t"},
		want: map[string]answer{"/": {Status: 302, Location: "http://new.example.org:8080/t"}, "/z": {Status: 302, Location: "http://new.example.org:8080/t"}},
	}, {
		// "Defines the Application Root that the Controller must redirect
		// if it's in / context": the documentation's curl shows "302 Moved
		// Temporarily", "Location: http://approot.bar.com/app1"; other
		// paths are proxied as they are.
		name: "approot", doc: nginxDocs + "#rewrite",
		ann: map[string]string{"app-root": "/app1"},
		want: map[string]answer{
			"/":       {Status: 302, Location: "http://" + e.host("approot") + "/app1"},
			"/app1":   backend("approot", "/app1"),
			"/other/": backend("approot", "/other/"),
		},
		queryKept: map[string]answer{"/?x=1": {Status: 302, Location: "http://" + e.host("approot") + "/app1?x=1"}},
	}, {
		// "Target URI where the traffic must be redirected": a target
		// without capture groups replaces the whole URI (nginx's rewrite
		// of the location's path).
		name: "rewrite", doc: nginxDocs + "#rewrite",
		ann:  map[string]string{"rewrite-target": "/"},
		path: "/api",
		// nginx's rewrite keeps the request's arguments when the target
		// has none.
		want: map[string]answer{"/api": backend("rewrite", "/"), "/api/v1/items": backend("rewrite", "/"),
			"/api/v1?x=1": {Status: 200, Path: "/", Host: e.host("rewrite"), Query: "x=1"}},
	}, {
		// ingress-nginx does not rewrite a location whose path is the
		// target itself.
		name: "rewritesame", doc: nginxDocs + "#rewrite",
		ann:  map[string]string{"rewrite-target": "/keep"},
		path: "/keep",
		want: map[string]answer{"/keep": backend("rewritesame", "/keep"), "/keep/x": backend("rewritesame", "/keep/x")},
	}, {
		// "This configuration setting allows you to control the value for
		// host in the following statement: proxy_set_header Host $host".
		name: "vhost", doc: nginxDocs + "#custom-nginx-upstream-vhost",
		ann:  map[string]string{"upstream-vhost": "internal.example.net"},
		want: map[string]answer{"/p": {Status: 200, Path: "/p", Host: "internal.example.net"}},
	}, {
		// "add the header X-Forwarded-Prefix to the upstream request with
		// the given value" (ingress-nginx sends it with rewrite-target).
		name: "xfp", doc: nginxDocs + "#x-forwarded-prefix-header",
		ann:  map[string]string{"rewrite-target": "/", "x-forwarded-prefix": "/api"},
		path: "/api",
		want: map[string]answer{"/api/v1": backend("xfp", "/", "/api")},
	}}
}

// nginxAnnotations is the ingress/annotations value of keys (names of
// ingress-nginx keys without their prefix).
func nginxAnnotations(t *testing.T, keys map[string]string) string {
	full := map[string]string{}
	for k, v := range keys {
		full["nginx.ingress.kubernetes.io/"+k] = v
	}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNginxRowsOnTheGateway: Services annotated with the ingress-nginx keys
// of each table row that Traefik's Gateway provider implements move from
// their Ingress to their HTTPRoute, and through the Gateway the requests
// get exactly the answers ingress-nginx's documentation gives: status,
// Location, and the path, Host and X-Forwarded-Prefix the backend
// receives. The redirect codes Traefik's class does not list (307, 308)
// keep the Service on its Ingress.
func TestNginxRowsOnTheGateway(t *testing.T) {
	const settle, drain = 200 * time.Millisecond, 200 * time.Millisecond
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain })
	e.gateway()
	rows := nginxRows(e)
	for _, row := range rows {
		ann := map[string]string{"ingress/http": "true", "ingress/annotations": nginxAnnotations(t, row.ann)}
		path := "/"
		if row.path != "" {
			ann["ingress/path"], path = row.path, row.path
		}
		e.webService(row.name, ann)
		e.waitRoute(e.host(row.name), path, row.name, row.name+": the Ingress")
	}
	// Codes Traefik's GatewayClass does not list: the Service stays.
	blocked := map[string]map[string]string{
		"perm308": {"permanent-redirect": "https://new.example.org/", "permanent-redirect-code": "308"},
		"temp307": {"temporal-redirect": "https://new.example.org/", "temporal-redirect-code": "307"},
	}
	for name, keys := range blocked {
		e.webService(name, map[string]string{"ingress/http": "true", "ingress/annotations": nginxAnnotations(t, keys)})
		e.waitRoute(e.host(name), "/", name, name+": the Ingress")
	}

	for _, row := range rows {
		e.Annotate(row.name, map[string]*string{"ingress/gateway": ptr.To("gw")})
	}
	for name := range blocked {
		e.Annotate(name, map[string]*string{"ingress/gateway": ptr.To("gw")})
	}

	for _, row := range rows {
		e.WaitNoIngress(row.name, row.name+": moved, its Ingress deleted")
		host := e.host(row.name)
		paths := make([]string, 0, len(row.want)+len(row.queryKept))
		for p := range row.want {
			paths = append(paths, p)
		}
		for p := range row.queryKept {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			want, ok := row.want[p]
			if !ok {
				want = row.queryKept[p]
			}
			var got answer
			var raw string
			framework.Eventually(t, routeTimeout, fmt.Sprintf("%s: GET http://%s%s via the Gateway answers %+v (%s)", row.name, host, p, want, row.doc), func(ctx context.Context) (bool, error) {
				r, err := traefik.GetGateway(ctx, host, p)
				if err != nil {
					return false, err
				}
				got, raw = answerOf(r, "http://"+host+p), r.Location
				if !equalAnswer(got, want) {
					return false, fmt.Errorf("got %s", r)
				}
				return true, nil
			})
			if !ok {
				t.Logf("%s: GET http://%s%s via the Gateway -> %+v (Location as sent: %q): the query kept, where ingress-nginx's Location drops it (%s; the translation table says so)", row.name, host, p, got, raw, row.doc)
				continue
			}
			t.Logf("%s: GET http://%s%s via the Gateway -> %+v (Location as sent: %q), as %s documents", row.name, host, p, got, raw, row.doc)
		}
	}

	for name, keys := range blocked {
		feature := "HTTPRoute308RedirectStatusCode"
		if keys["temporal-redirect-code"] == "307" {
			feature = "HTTPRoute307RedirectStatusCode"
		}
		e.WaitEvent(name, corev1.EventTypeWarning, "NotCarriedToHTTPRoute", feature)
		e.barrier()
		e.route(e.host(name), "/", name, name+": blocked, still on its Ingress")
		e.WaitIngress(name, name+": kept", nil)
	}
}

// equalAnswer compares answers, a nil and an empty Prefix alike.
func equalAnswer(a, b answer) bool {
	return a.Status == b.Status && a.Location == b.Location && a.Path == b.Path && a.Host == b.Host && a.Query == b.Query && slices.Equal(a.Prefix, b.Prefix)
}
