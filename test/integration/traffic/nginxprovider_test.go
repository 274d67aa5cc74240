package traffic

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// nginxCase is a request and the answer ingress-nginx's documentation
// gives to it for an Ingress (or Service) named name with annotations ann
// (ingress-nginx keys without their prefix).
type nginxCase struct {
	name, doc string
	ann       map[string]string
	method    string
	path      string
	header    http.Header
	// check says what in the answer r differs from ingress-nginx's ("":
	// nothing).
	check func(e *env, c nginxCase, r dataplane.Response) string
}

// corsOrigin is the Origin of the CORS requests.
const corsOrigin = "https://app.example.com"

// nginxCases are the requests whose answers both Traefik's
// kubernetesIngressNGINX provider and the ingress-manager's translation
// implement on the Ingress side: a plain host/path/backend,
// force-ssl-redirect and a CORS preflight.
var nginxCases = []nginxCase{{
	name: "plain", method: http.MethodGet, path: "/p/q",
	check: func(e *env, c nginxCase, r dataplane.Response) string {
		if r.Status != 200 || r.Backend != c.name || r.Path != c.path || r.Host != e.host(c.name) {
			return "want 200 from backend " + c.name + " with path " + c.path
		}
		return ""
	},
}, {
	// "When using SSL offloading outside of cluster ... enforce a
	// redirect to HTTPS even when there is no TLS certificate available.
	// This can be achieved by using the
	// nginx.ingress.kubernetes.io/force-ssl-redirect: "true"", with
	// ingress-nginx's default http-redirect-code 308.
	name: "force", doc: nginxDocs + "#server-side-https-enforcement-through-redirect",
	ann:    map[string]string{"force-ssl-redirect": "true"},
	method: http.MethodGet, path: "/x/y",
	check: func(e *env, c nginxCase, r dataplane.Response) string {
		if want := "https://" + e.host(c.name) + c.path; r.Status != 308 || r.Location != want {
			return "want 308 to " + want
		}
		return ""
	},
}, {
	// "Enables Cross-Origin Resource Sharing (CORS) in an Ingress rule":
	// a preflight is answered by nginx, not the backend, with
	// cors-allow-origin's default *, the default methods "GET, PUT, POST,
	// DELETE, PATCH, OPTIONS", credentials allowed and max age 1728000.
	// ingress-nginx's template answers the preflight 204, Traefik's
	// emulation 200 (measured); both are the 2xx a browser needs, so the
	// status is checked as 2xx and the headers exactly (as lists: nginx
	// writes "GET, PUT", Traefik "GET,PUT").
	name: "cors", doc: nginxDocs + "#enable-cors",
	ann:    map[string]string{"enable-cors": "true"},
	method: http.MethodOptions, path: "/",
	header: http.Header{"Origin": {corsOrigin}, "Access-Control-Request-Method": {"PUT"}},
	check: func(_ *env, _ nginxCase, r dataplane.Response) string {
		h := r.Header
		switch {
		case r.Backend != "" || r.Status/100 != 2:
			return "want a 2xx answer from the proxy, not the backend"
		case h.Get("Access-Control-Allow-Origin") != "*":
			return "want Access-Control-Allow-Origin *"
		case !slices.Equal(headerList(h, "Access-Control-Allow-Methods"), []string{"GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}):
			return "want Access-Control-Allow-Methods GET, PUT, POST, DELETE, PATCH, OPTIONS"
		case h.Get("Access-Control-Allow-Credentials") != "true":
			return "want Access-Control-Allow-Credentials true"
		case h.Get("Access-Control-Max-Age") != "1728000":
			return "want Access-Control-Max-Age 1728000"
		}
		return ""
	},
}}

// headerList is the comma-separated list of header name in h.
func headerList(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for _, s := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// send sends c's request for host to Traefik's entrypoint addr.
func (c nginxCase) send(ctx context.Context, addr, host string) (dataplane.Response, error) {
	return traefik.Do(ctx, addr, c.method, host, c.path, c.header)
}

// describe is r with the CORS answer headers.
func describe(r dataplane.Response) string {
	s := r.String()
	var cors []string
	for k, v := range r.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			cors = append(cors, k+": "+strings.Join(v, ","))
		}
	}
	slices.Sort(cors)
	if len(cors) > 0 {
		s += " [" + strings.Join(cors, "; ") + "]"
	}
	return s
}

// waitNginxAnswer waits until c's request for host through addr gets the
// answer ingress-nginx documents.
func (e *env) waitNginxAnswer(c nginxCase, addr, host, what string) {
	e.T.Helper()
	var last string
	framework.Eventually(e.T, routeTimeout, fmt.Sprintf("%s: %s http://%s%s answers as ingress-nginx (%s)", what, c.method, host, c.path, c.doc), func(ctx context.Context) (bool, error) {
		r, err := c.send(ctx, addr, host)
		if err != nil {
			return false, err
		}
		last = describe(r)
		if why := c.check(e, c, r); why != "" {
			return false, fmt.Errorf("got %s; %s", last, why)
		}
		return true, nil
	})
	e.T.Logf("%s: %s http://%s%s -> %s", what, c.method, host, c.path, last)
}

// nginxIngress creates a user's Ingress of class nginx for host/ to
// Service name's port 80, with ingress-nginx keys ann (without their
// prefix) and, when tlsSecret is set, TLS for the host with that Secret.
func (e *env) nginxIngress(name string, ann map[string]string, tlsSecret string) {
	e.T.Helper()
	full := map[string]string{}
	for k, v := range ann {
		full["nginx.ingress.kubernetes.io/"+k] = v
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name, Annotations: full},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(dataplane.NGINXIngressClass),
			Rules: []networkingv1.IngressRule{{
				Host: e.host(name),
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
				}},
			}},
		},
	}
	if tlsSecret != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{e.host(name)}, SecretName: tlsSecret}}
	}
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Create(e.Ctx, ing, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// TestNginxProviderServesIngress proves the before-side harness: a user's
// Ingress of class nginx with ingress-nginx annotations is served by
// Traefik's kubernetesIngressNGINX provider as ingress-nginx documents it:
// a plain host/path/backend, force-ssl-redirect's 308 to https, CORS
// preflights answered with the Access-Control-* headers, and an Ingress
// with TLS (ssl-redirect's default true) redirecting plain HTTP with 308
// and serving HTTPS with its Secret's certificate.
func TestNginxProviderServesIngress(t *testing.T) {
	e := setup(t)
	dataplane.CreateNGINXClass(t, e.Client)
	for _, c := range nginxCases {
		e.webService(c.name, nil)
		e.nginxIngress(c.name, c.ann, "")
	}
	for _, c := range nginxCases {
		e.waitNginxAnswer(c, traefik.HTTPAddr, e.host(c.name), c.name+": a user's Ingress of class nginx")
	}

	// "By default the controller redirects (308) to HTTPS if TLS is
	// enabled for that ingress" (ssl-redirect, default true).
	const name = "tls"
	h := e.host(name)
	cert, certPEM, keyPEM := selfSignedCert(t, h)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name + "-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
	if _, err := e.Client.CoreV1().Secrets(e.NS).Create(e.Ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.webService(name, nil)
	e.nginxIngress(name, nil, secret.Name)
	redirect := nginxCase{name: name, doc: nginxDocs + "#server-side-https-enforcement-through-redirect",
		method: http.MethodGet, path: "/s", check: nginxCases[1].check}
	e.waitNginxAnswer(redirect, traefik.HTTPAddr, h, "tls: plain HTTP to an Ingress with TLS")
	framework.Eventually(t, routeTimeout, "tls: https://"+h+"/s reaches the backend with the Secret's certificate", func(ctx context.Context) (bool, error) {
		r, err := traefik.GetTLS(ctx, h, "/s")
		if err != nil {
			return false, err
		}
		if r.Status != 200 || r.Backend != name || r.Path != "/s" || r.Certificate == nil || !r.Certificate.Equal(cert) {
			return false, fmt.Errorf("got %s (our certificate: %v)", r, r.Certificate != nil && r.Certificate.Equal(cert))
		}
		return true, nil
	})
}

// TestNginxRowsMoveOrStay: Services of class nginx whose ingress/annotations
// hold the keys of nginxCases are first served by their Ingress as
// ingress-nginx would (Traefik's kubernetesIngressNGINX provider); asked
// onto the Gateway, the plain one moves and the Gateway answers as the
// Ingress did, while force-ssl-redirect (which takes a second route) and
// enable-cors (Traefik's GatewayClass does not list HTTPRouteCORS) block:
// those Services stay on their Ingress, and every request of a stream sent
// through the Ingress while the controller decides, and for longer than
// the settle time and the DNS drain after, gets its before-answer.
func TestNginxRowsMoveOrStay(t *testing.T) {
	const settle, drain = 300 * time.Millisecond, 300 * time.Millisecond
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain })
	dataplane.CreateNGINXClass(t, e.Client)
	e.gateway()
	for _, c := range nginxCases {
		e.webService(c.name, map[string]string{
			"ingress/http": "true", "ingress/class": dataplane.NGINXIngressClass,
			"ingress/annotations": nginxAnnotations(t, c.ann),
		})
	}
	for _, c := range nginxCases {
		e.waitNginxAnswer(c, traefik.HTTPAddr, e.host(c.name), c.name+": before, its Ingress")
	}

	// A stream of each request through the Ingress entrypoint.
	type result struct {
		at  time.Time
		bad string
	}
	var (
		mu      sync.Mutex
		results = map[string][]result{}
	)
	ctx, cancel := context.WithCancel(e.Ctx)
	var wg sync.WaitGroup
	for _, c := range nginxCases[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r, err := c.send(ctx, traefik.HTTPAddr, e.host(c.name))
				if ctx.Err() != nil {
					return
				}
				res := result{at: time.Now()}
				if err != nil {
					res.bad = err.Error()
				} else if why := c.check(e, c, r); why != "" {
					res.bad = describe(r) + "; " + why
				}
				mu.Lock()
				results[c.name] = append(results[c.name], res)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // the stream's pace, not a wait for a condition
			}
		}()
	}
	start := time.Now()
	for _, c := range nginxCases {
		e.Annotate(c.name, map[string]*string{"ingress/gateway": ptr.To("gw")})
	}

	// The plain one moves: the Gateway answers as the Ingress did.
	plain := nginxCases[0]
	e.waitNginxAnswer(plain, traefik.GatewayAddr, e.host(plain.name), "plain: after the move, the Gateway")
	e.WaitNoIngress(plain.name, "plain: moved, its Ingress deleted")

	// The others block, each naming its key, and stay.
	e.WaitEvent("force", corev1.EventTypeWarning, "NotCarriedToHTTPRoute", "force-ssl-redirect")
	e.WaitEvent("cors", corev1.EventTypeWarning, "NotCarriedToHTTPRoute", "enable-cors", "HTTPRouteCORS")
	decided := time.Now()
	// Longer than the settle time and the drain, so that a move begun
	// would have deleted the Ingress by now.
	time.Sleep(2 * (settle + drain)) // the observation window itself, not a wait for a condition
	cancel()
	wg.Wait()
	for _, c := range nginxCases[1:] {
		if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, c.name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: its Ingress is not kept: %v", c.name, err)
		}
		mu.Lock()
		rs := results[c.name]
		mu.Unlock()
		bad := 0
		for _, r := range rs {
			if r.bad != "" {
				bad++
				t.Errorf("%s: request at %v after the move was asked answered otherwise than before: %s", c.name, r.at.Sub(start).Round(time.Millisecond), r.bad)
			}
		}
		if len(rs) == 0 || rs[len(rs)-1].at.Before(decided) {
			t.Errorf("%s: the stream did not run past the decision", c.name)
		}
		t.Logf("%s: %d requests through its Ingress from the ask to %v after the Warning, %d answered otherwise than before", c.name, len(rs), time.Since(decided).Round(time.Millisecond), bad)
		e.waitNginxAnswer(c, traefik.HTTPAddr, e.host(c.name), c.name+": after, still its Ingress")
		if r, err := c.send(e.Ctx, traefik.GatewayAddr, e.host(c.name)); err == nil {
			t.Logf("%s: the same request via the Gateway -> %s (measured, not a requirement)", c.name, describe(r))
		}
	}
}
