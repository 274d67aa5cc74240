package dataplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TraefikOptions configure StartTraefik.
type TraefikOptions struct {
	// Binary is the traefik executable; empty: <repo>/bin/traefik.
	Binary string
	// Dir holds the kubeconfig and the log; empty: a new temporary
	// directory, removed by Stop.
	Dir string
	// ThrottleDuration is Traefik's providersThrottleDuration, the least
	// time between two configurations it applies (Traefik's default is 2s,
	// which would dominate every wait of a test). 0: DefaultThrottle.
	ThrottleDuration time.Duration
	// LogLevel of Traefik: DEBUG, INFO (default), WARN, ERROR.
	LogLevel string
	// Namespaces limits what Traefik watches; empty: every namespace.
	Namespaces []string
	// Gateway enables Traefik's kubernetesGateway provider (the Gateway API
	// CRDs must be served) and its own entrypoint, GatewayAddr.
	Gateway bool
	// GatewayEntryPoints is how many entrypoints Gateway listeners get
	// (GatewayAddrs), each on a port of its own; 0: one.
	GatewayEntryPoints int
	// IngressIP, when set, is the address Traefik publishes in the status
	// of every Ingress it serves (status.loadBalancer.ingress, its
	// ingressEndpoint.ip), as an Ingress controller behind a load balancer
	// does. It is only written, never listened on.
	IngressIP string
	// IngressNGINX enables Traefik's kubernetesIngressNGINX provider as
	// well: Ingresses of the IngressClass NGINXIngressClass (whose
	// spec.controller is NGINXIngressController, which CreateNGINXClass
	// makes) are served on the HTTP and HTTPS entrypoints as ingress-nginx
	// would serve them, with the ingress-nginx annotations Traefik
	// implements (force-ssl-redirect, ssl-redirect, enable-cors and
	// cors-*, ...). Ingresses without a class stay the kubernetesIngress
	// provider's (watchIngressWithoutClass is off), those of the class
	// NGINXIngressClass are not its. Traefik attaches the plain-HTTP
	// router of an Ingress with TLS to every entrypoint without TLS, the
	// Gateway's too.
	IngressNGINX bool
	// GatewayIP, when set (with Gateway), is the address Traefik publishes
	// in the status of the Gateways it serves (status.addresses, its
	// statusAddress.ip). It is only written, never listened on.
	GatewayIP string
}

// DefaultThrottle is the providersThrottleDuration of tests.
const DefaultThrottle = 50 * time.Millisecond

// IngressClass and IngressController are the IngressClass name and the
// spec.controller under which Traefik serves Ingresses that name a class
// (it serves Ingresses without a class too).
const (
	IngressClass      = "traefik"
	IngressController = "traefik.io/ingress-controller"
)

// NGINXIngressClass and NGINXIngressController are the IngressClass and
// its spec.controller whose Ingresses Traefik's kubernetesIngressNGINX
// provider serves (TraefikOptions.IngressNGINX): ingress-nginx's defaults,
// which the provider takes as its ingressClass and controllerClass.
const (
	NGINXIngressClass      = "nginx"
	NGINXIngressController = "k8s.io/ingress-nginx"
)

// GatewayController is the controllerName of a GatewayClass whose
// Gateways Traefik serves (with TraefikOptions.Gateway).
const GatewayController = "traefik.io/gateway-controller"

// Traefik is a running Traefik process whose kubernetesIngress provider
// watches the API server of the config it was started with.
type Traefik struct {
	// HTTPAddr is the plain HTTP entrypoint, HTTPSAddr the entrypoint
	// terminating TLS with the certificates of the Ingresses' Secrets,
	// APIAddr the ping and API entrypoint; all on 127.0.0.1.
	HTTPAddr, HTTPSAddr, APIAddr string
	// GatewayAddr is the entrypoint of Gateway listeners (with
	// TraefikOptions.Gateway): a listener is served on the entrypoint of
	// its port, so a Gateway's HTTP listener has GatewayPort as its port.
	// Ingresses are not served there, nor HTTPRoutes on the others.
	GatewayAddr string
	// GatewayAddrs are every entrypoint of Gateway listeners
	// (TraefikOptions.GatewayEntryPoints), GatewayAddr first: a listener
	// on GatewayPortAt(i) is served on GatewayAddrs[i].
	GatewayAddrs []string
	// Throttle is the providersThrottleDuration it runs with.
	Throttle time.Duration

	// gatewayIP is TraefikOptions.GatewayIP.
	gatewayIP string

	proc  *framework.Process
	dir   string
	rmDir bool
	stop  sync.Once
}

// StartTraefik starts Traefik with its kubernetesIngress provider against
// cfg's API server, on free loopback ports, and waits until it answers its
// ping. Ingresses are served with the Kubernetes spec's Prefix semantics
// (strictPrefixMatching: "/v1" matches "/v1/x" but not "/v1x", which
// Traefik's default character-wise prefix would match).
func StartTraefik(cfg *rest.Config, o TraefikOptions) (*Traefik, error) {
	if o.Binary == "" {
		root, err := framework.RepoRoot()
		if err != nil {
			return nil, err
		}
		o.Binary = filepath.Join(root, "bin", "traefik")
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("%s not found: run `make tools` (hack/build-tools.sh traefik) first", o.Binary)
	}
	if o.ThrottleDuration == 0 {
		o.ThrottleDuration = DefaultThrottle
	}
	if o.LogLevel == "" {
		o.LogLevel = "INFO"
	}
	tr := &Traefik{Throttle: o.ThrottleDuration, gatewayIP: o.GatewayIP, dir: o.Dir}
	if tr.dir == "" {
		d, err := os.MkdirTemp("", "traefik-")
		if err != nil {
			return nil, err
		}
		tr.dir, tr.rmDir = d, true
	}
	kubeconfig := filepath.Join(tr.dir, "kubeconfig")
	if err := framework.WriteKubeconfig(cfg, kubeconfig); err != nil {
		tr.cleanup()
		return nil, err
	}
	gatewayEntryPoints := 0
	if o.Gateway {
		gatewayEntryPoints = max(o.GatewayEntryPoints, 1)
	}
	ports, err := freePorts(3 + gatewayEntryPoints)
	if err != nil {
		tr.cleanup()
		return nil, err
	}
	tr.HTTPAddr, tr.HTTPSAddr, tr.APIAddr = ports[0], ports[1], ports[2]

	args := []string{
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
		"--log.level=" + o.LogLevel,
		"--entryPoints.web.address=" + tr.HTTPAddr,
		"--entryPoints.websecure.address=" + tr.HTTPSAddr,
		// TLS on the entrypoint, as Traefik's Helm chart does: Traefik's
		// Ingress provider puts the Secrets' certificates in its store
		// but does not make a router TLS from spec.tls.
		"--entryPoints.websecure.http.tls=true",
		"--entryPoints.traefik.address=" + tr.APIAddr,
		"--ping=true",
		"--api=true",
		"--api.insecure=true",
		"--providers.kubernetesIngress=true",
		"--providers.kubernetesIngress.strictPrefixMatching=true",
		"--providers.providersThrottleDuration=" + o.ThrottleDuration.String(),
	}
	if len(o.Namespaces) > 0 {
		args = append(args, "--providers.kubernetesIngress.namespaces="+strings.Join(o.Namespaces, ","))
	}
	if o.IngressIP != "" {
		args = append(args, "--providers.kubernetesIngress.ingressEndpoint.ip="+o.IngressIP)
	}
	if o.IngressNGINX {
		args = append(args, "--providers.kubernetesIngressNGINX=true")
	}
	if o.Gateway {
		tr.GatewayAddrs = ports[3:]
		tr.GatewayAddr = tr.GatewayAddrs[0]
		for i, addr := range tr.GatewayAddrs {
			args = append(args, fmt.Sprintf("--entryPoints.%s.address=%s", gatewayEntryPoint(i), addr))
		}
		args = append(args,
			// Routers without entrypoints of their own (every Ingress's)
			// use the default ones only: not the Gateway's.
			"--entryPoints.web.asDefault=true",
			"--entryPoints.websecure.asDefault=true",
			"--providers.kubernetesGateway=true",
		)
		if len(o.Namespaces) > 0 {
			args = append(args, "--providers.kubernetesGateway.namespaces="+strings.Join(o.Namespaces, ","))
		}
		if o.GatewayIP != "" {
			args = append(args, "--providers.kubernetesGateway.statusAddress.ip="+o.GatewayIP)
		}
	}
	// Own process group, killed with the test process.
	tr.proc, err = framework.StartProcess("traefik", o.Binary, args, framework.ProcessOptions{
		Dir: tr.dir, Env: traefikEnv(kubeconfig), LogPath: filepath.Join(tr.dir, "traefik.log"), SysProcAttr: processAttr()})
	if err != nil {
		tr.cleanup()
		return nil, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if exited, err := tr.proc.Exited(); exited {
			return false, fmt.Errorf("traefik exited: %v", err)
		}
		resp, err := client.Get("http://" + tr.APIAddr + "/ping")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		logs := tr.Logs()
		tr.Stop()
		return nil, fmt.Errorf("traefik not ready: %w; its log:\n%s", err, logs)
	}
	return tr, nil
}

// GatewayPort is the port of GatewayAddr.
func (tr *Traefik) GatewayPort() int32 { return tr.GatewayPortAt(0) }

// GatewayPortAt is the port of GatewayAddrs[i]: a Gateway listener on it
// is served there.
func (tr *Traefik) GatewayPortAt(i int) int32 {
	_, p, _ := net.SplitHostPort(tr.GatewayAddrs[i])
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// gatewayEntryPoint names Traefik's entrypoint of GatewayAddrs[i].
func gatewayEntryPoint(i int) string {
	if i == 0 {
		return "gateway"
	}
	return fmt.Sprintf("gateway%d", i+1)
}

// traefikEnv is this process's environment with KUBECONFIG set and the
// in-cluster variables removed: Traefik prefers them to KUBECONFIG.
func traefikEnv(kubeconfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBERNETES_SERVICE_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KUBECONFIG="+kubeconfig)
}

// Stop terminates Traefik and removes its temporary directory.
func (tr *Traefik) Stop() {
	tr.stop.Do(func() {
		if tr.proc != nil {
			_ = tr.proc.Stop(10 * time.Second)
		}
		tr.cleanup()
	})
}

func (tr *Traefik) cleanup() {
	if tr.rmDir {
		_ = os.RemoveAll(tr.dir)
	}
}

// Exited reports whether the Traefik process has ended (it should not
// while the tests run) and why.
func (tr *Traefik) Exited() (bool, error) { return tr.proc.Exited() }

// Logs returns Traefik's log so far (the last 64 KiB).
func (tr *Traefik) Logs() string { return tr.proc.Logs(64 << 10) }

// Routers returns Traefik's view of its HTTP routers (its API's
// /api/http/routers), for failure messages.
func (tr *Traefik) Routers() string {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + tr.APIAddr + "/api/http/routers")
	if err != nil {
		return fmt.Sprintf("(asking traefik for its routers: %v)", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return string(b)
}

// Response is what a request through Traefik got.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Backend is the name of the backend that answered ("" when the
	// answer did not come from a backend, e.g. Traefik's own 404).
	Backend string
	// Path is the request path the backend saw.
	Path string
	// Host is the Host header the backend saw, and ForwardedPrefix its
	// X-Forwarded-Prefix headers (nil: none), Query its query string.
	Host            string
	ForwardedPrefix []string
	Query           string
	// Location is the answer's Location header.
	Location string
	// Header is every header of the answer.
	Header http.Header
	// Certificate is the leaf certificate Traefik presented (HTTPS only).
	Certificate *x509.Certificate
}

func (r Response) String() string {
	if r.Backend == "" {
		if r.Location != "" {
			return fmt.Sprintf("%d from traefik, Location %s", r.Status, r.Location)
		}
		return fmt.Sprintf("%d from traefik", r.Status)
	}
	return fmt.Sprintf("%d from backend %s (path %s, host %s, X-Forwarded-Prefix %q)", r.Status, r.Backend, r.Path, r.Host, r.ForwardedPrefix)
}

// httpClient sends each request on a new connection, so that every request
// is routed afresh and none waits on a connection of a former one.
var httpClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// Get sends GET http://host/path through Traefik's HTTP entrypoint.
func (tr *Traefik) Get(ctx context.Context, host, path string) (Response, error) {
	return tr.get(ctx, tr.HTTPAddr, host, path)
}

// GetGateway is Get through the Gateway entrypoint (GatewayAddr).
func (tr *Traefik) GetGateway(ctx context.Context, host, path string) (Response, error) {
	return tr.get(ctx, tr.GatewayAddr, host, path)
}

// GetGatewayAt is Get through the Gateway entrypoint GatewayAddrs[i].
func (tr *Traefik) GetGatewayAt(ctx context.Context, i int, host, path string) (Response, error) {
	return tr.get(ctx, tr.GatewayAddrs[i], host, path)
}

func (tr *Traefik) get(ctx context.Context, addr, host, path string) (Response, error) {
	return tr.Do(ctx, addr, http.MethodGet, host, path, nil)
}

// Do sends method http://host/path, with header, to addr (one of
// Traefik's entrypoints: HTTPAddr, GatewayAddrs, NginxAddr).
func (tr *Traefik) Do(ctx context.Context, addr, method, host, path string, header http.Header) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
	if err != nil {
		return Response{}, err
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	return do(httpClient, req)
}

// GetTLS sends GET https://host/path through Traefik's HTTPS entrypoint,
// with host as the TLS server name (SNI). The certificate is not verified
// here; Response.Certificate is the one Traefik presented.
func (tr *Traefik) GetTLS(ctx context.Context, host, path string) (Response, error) {
	return tr.GetTLSAt(ctx, tr.HTTPSAddr, host, path)
}

// GetTLSAt is GetTLS through the entrypoint addr: GatewayAddrs[i] for a
// Gateway's HTTPS listener on GatewayPortAt(i).
func (tr *Traefik) GetTLSAt(ctx context.Context, addr, host, path string) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		return Response{}, err
	}
	req.Host = host
	c := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			Proxy:             nil,
			// #nosec G402 -- the test compares the presented certificate itself.
			TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		},
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) (Response, error) {
	resp, err := c.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Response{}, err
	}
	r := Response{Status: resp.StatusCode, Backend: resp.Header.Get(headerBackend), Location: resp.Header.Get("Location"), Header: resp.Header}
	if r.Backend != "" {
		r.Path = string(bytes.TrimSpace(body))
		r.Host = resp.Header.Get(headerHost)
		r.ForwardedPrefix = resp.Header.Values(headerForwardedPrefix)
		r.Query = resp.Header.Get(headerQuery)
	}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		r.Certificate = resp.TLS.PeerCertificates[0]
	}
	return r, nil
}

// freePorts returns n distinct free 127.0.0.1 addresses. They are free when
// returned; inside the private network namespace nothing else takes them.
func freePorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port)))
	}
	return out, nil
}
