package neutrontest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
)

// Proxy is a reverse proxy on 127.0.0.1 in front of the real Keystone
// (under /identity) and Neutron (under /networking) that injects what the
// real servers cannot be made to do on demand: error statuses, latency,
// dropped connections and expired tokens. It counts requests per route.
//
// The service catalogs Keystone returns through it name the proxy as the
// network endpoint, so a client configured with AuthURL finds Neutron
// through the catalog as usual and reaches it only through the proxy.
type Proxy struct {
	// URL is the proxy's base URL.
	URL string

	srv     *httptest.Server
	latency atomic.Int64 // a time.Duration
	down    atomic.Bool

	mu       sync.Mutex // guards the fields below
	failNext []int
	routes   map[string]*routeFault
	holds    map[string][]*Held
	counts   map[string]int
	created  []string // descriptions of the networks Neutron confirmed creating
}

type routeFault struct {
	status, remaining int
	body              string // "" for the default body (see serve)
}

const (
	identityPrefix = "/identity"
	networkPrefix  = "/networking"
)

// NewProxy starts a proxy in front of c; it stops when t ends.
func (c *Cloud) NewProxy(t testing.TB) *Proxy {
	t.Helper()
	p, err := StartProxy(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a proxy in front of c for callers that are not tests
// (the bench); the caller stops it with Close.
func StartProxy(c *Cloud) (*Proxy, error) {
	keystone, err := url.Parse(c.KeystoneURL)
	if err != nil {
		return nil, fmt.Errorf("parsing keystone url: %w", err)
	}
	nw, err := url.Parse(c.NeutronURL)
	if err != nil {
		return nil, fmt.Errorf("parsing neutron url: %w", err)
	}
	p := &Proxy{routes: map[string]*routeFault{}, counts: map[string]int{}, holds: map[string][]*Held{}}
	kp, np := httputil.NewSingleHostReverseProxy(keystone), httputil.NewSingleHostReverseProxy(nw)
	kp.ModifyResponse = func(resp *http.Response) error {
		// The catalog of a new token: Neutron through the proxy.
		if resp.Request.Method != http.MethodPost || !strings.HasSuffix(resp.Request.URL.Path, "/auth/tokens") {
			return nil
		}
		return rewriteBody(resp, []byte(`"`+strings.TrimSuffix(c.NeutronURL, "/")), []byte(`"`+p.URL+networkPrefix))
	}
	np.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusCreated && resp.Request.Method == http.MethodPost &&
			strings.HasSuffix(resp.Request.URL.Path, "/v2.0/networks") {
			return p.recordCreate(resp)
		}
		if resp.Request.Method == http.MethodGet {
			// Neutron builds the links to a list's next pages from the
			// Host it was asked at (the proxy's): they lack our prefix.
			return rewriteBody(resp, []byte(`"`+p.URL+"/v2.0/"), []byte(`"`+p.URL+networkPrefix+"/v2.0/"))
		}
		return nil
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var next http.Handler
		switch {
		case strings.HasPrefix(r.URL.Path, identityPrefix):
			r.URL.Path = strings.TrimPrefix(r.URL.Path, identityPrefix)
			next = kp
		case strings.HasPrefix(r.URL.Path, networkPrefix):
			r.URL.Path = strings.TrimPrefix(r.URL.Path, networkPrefix)
			next = np
		default:
			http.NotFound(w, r)
			return
		}
		r.URL.RawPath = ""
		p.serve(w, r, next)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the proxy: %w", err)
	}
	p.srv.Listener = l
	p.srv.Start()
	p.URL = p.srv.URL
	return p, nil
}

// rewriteBody replaces old with new in resp's body.
func rewriteBody(resp *http.Response, old, new []byte) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	body = bytes.ReplaceAll(body, old, new)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// AuthURL is Keystone's v3 URL through the proxy.
func (p *Proxy) AuthURL() string { return p.URL + identityPrefix + "/v3" }

// Env returns env with OS_AUTH_URL pointing through the proxy.
func (p *Proxy) Env(env map[string]string) map[string]string {
	out := clone(env)
	out["OS_AUTH_URL"] = p.AuthURL()
	return out
}

// Backend returns a backend of the controller's user that reaches Keystone
// and Neutron only through p (opts as for Cloud.Backend).
func (p *Proxy) Backend(t testing.TB, c *Cloud, opts neutron.Options) *neutron.Backend {
	t.Helper()
	if opts.Getenv == nil {
		opts.Getenv = Getenv(p.Env(c.env))
	}
	return c.Backend(t, opts)
}

// CreatedNetworks returns the descriptions of the networks Neutron
// confirmed creating (201) through the proxy, in order. A create whose
// client gave up before the answer is not in it; whatever network Neutron
// made for it is still in Neutron for a test to find.
func (p *Proxy) CreatedNetworks() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.created...)
}

var idSegment = regexp.MustCompile(`/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// route names a request as Count does: "POST /v2.0/subnets",
// "PUT /v2.0/networks/{id}/tags", "POST /v3/auth/tokens".
func route(r *http.Request) string {
	return r.Method + " " + idSegment.ReplaceAllString(r.URL.Path, "/{id}")
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rt := route(r)
	p.mu.Lock()
	p.counts[rt]++
	var held *Held
	if hs := p.holds[rt]; len(hs) > 0 {
		held, p.holds[rt] = hs[0], hs[1:]
	}
	p.mu.Unlock()
	if held != nil {
		held.serve(w, r, next)
		return
	}
	latency, down := time.Duration(p.latency.Load()), p.down.Load()

	if latency > 0 {
		timer := time.NewTimer(latency)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return
		}
	}
	if down {
		// As a dead server or load balancer: the connection closes with no
		// response.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}

	p.mu.Lock()
	status, body := 0, ""
	if f := p.routes[rt]; f != nil && f.remaining != 0 {
		status, body = f.status, f.body
		if f.remaining > 0 {
			f.remaining--
		}
	} else if strings.Contains(rt, " /v2.0/") && len(p.failNext) > 0 {
		status = p.failNext[0]
		p.failNext = p.failNext[1:]
	}
	p.mu.Unlock()
	if status != 0 {
		switch {
		case body != "":
			w.Header().Set("Content-Type", "application/json")
		case status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
			// What a load balancer in front of a dead Neutron answers: its
			// own page, not Neutron's error body.
			w.Header().Set("Content-Type", "text/html")
			body = fmt.Sprintf("<html><body><h1>%d %s</h1>No server is available to handle this request.</body></html>",
				status, http.StatusText(status))
		default:
			w.Header().Set("Content-Type", "application/json")
			body = fmt.Sprintf(`{"NeutronError": {"type": "Injected", "message": "injected by the test proxy: %s", "detail": ""}}`,
				http.StatusText(status))
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
		return
	}
	next.ServeHTTP(w, r)
}

// SetLatency delays every request by d (0 removes it).
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// SetDown makes the proxy drop every request (connection closed, no
// response) until SetDown(false).
func (p *Proxy) SetDown(down bool) { p.down.Store(down) }

// FailNext makes the next n Neutron API requests fail with status.
func (p *Proxy) FailNext(n, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.failNext = append(p.failNext, status)
	}
}

// FailRoute makes the next n requests to route (as Count names it) fail
// with status; n < 0: until ClearFaults. A 401 on a Neutron route is what a
// client sees when its token expired.
func (p *Proxy) FailRoute(route string, status, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.routes[route] = &routeFault{status: status, remaining: n}
}

// FailRouteWith is FailRoute with the response body body (JSON), e.g. a
// NeutronError Neutron itself answers with.
func (p *Proxy) FailRouteWith(route string, status int, body string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.routes[route] = &routeFault{status: status, remaining: n, body: body}
}

// NeutronError returns the body Neutron answers a failed request with
// (neutron.api.api_common.convert_exception_to_http_exc): the exception's
// class name as its type, and its message.
func NeutronError(typ, message string) string {
	b, _ := json.Marshal(map[string]any{"NeutronError": map[string]string{"type": typ, "message": message, "detail": ""}})
	return string(b)
}

// Held is a request the proxy holds (see Hold).
type Held struct {
	arrived, release, done chan struct{}
	status                 int
}

// Hold makes the proxy hold the next request to route (as Count names it;
// after the ones already held) until Release, and then send it on to
// Neutron even when its client gave up meanwhile: a request that is still
// running in Neutron after the client's timeout, as under load.
func (p *Proxy) Hold(route string) *Held {
	h := &Held{arrived: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holds[route] = append(p.holds[route], h)
	return h
}

// Arrived is closed when the held request reached the proxy.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Release sends the held request on to Neutron.
func (h *Held) Release() { close(h.release) }

// Done is closed when Neutron answered the released request.
func (h *Held) Done() <-chan struct{} { return h.done }

// Status is Neutron's status code for the released request, once Done.
func (h *Held) Status() int { return h.status }

func (h *Held) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	// Read the body now: the client may be gone when the request goes on.
	body, err := io.ReadAll(r.Body)
	close(h.arrived)
	if err != nil {
		close(h.done)
		return
	}
	<-h.release
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, out)
	h.status = rec.Code
	close(h.done)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// ClearFaults removes every fault.
func (p *Proxy) ClearFaults() {
	p.SetLatency(0)
	p.SetDown(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext, p.routes = nil, map[string]*routeFault{}
}

// Count returns how many requests route received (faulted ones too).
func (p *Proxy) Count(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[route]
}

// Counts returns a copy of every route's count.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Writes returns the number of Neutron write requests (POST, PUT, DELETE).
func (p *Proxy) Writes() int {
	n := 0
	for k, v := range p.Counts() {
		if strings.Contains(k, " /v2.0/") && !strings.HasPrefix(k, "GET ") {
			n += v
		}
	}
	return n
}

// Requests returns the number of Neutron API requests.
func (p *Proxy) Requests() int {
	n := 0
	for k, v := range p.Counts() {
		if strings.Contains(k, " /v2.0/") {
			n += v
		}
	}
	return n
}

// recordCreate notes the description of the network a 201 answer carries.
func (p *Proxy) recordCreate(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return err
	}
	var created struct {
		Network struct {
			Description string `json:"description"`
		} `json:"network"`
	}
	if json.Unmarshal(body, &created) == nil {
		p.mu.Lock()
		p.created = append(p.created, created.Network.Description)
		p.mu.Unlock()
	}
	return nil
}
