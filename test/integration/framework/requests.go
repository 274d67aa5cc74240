package framework

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// RequestCounter counts the API requests made through a config, by verb and
// resource ("POST ingresses", "PATCH ingresses", ...).
type RequestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

// CountRequests returns a copy of cfg whose requests are counted.
func CountRequests(cfg *rest.Config) (*rest.Config, *RequestCounter) {
	rc := &RequestCounter{counts: map[string]int{}}
	c := rest.CopyConfig(cfg)
	wrap := c.WrapTransport
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return countingRoundTripper{rt: rt, rc: rc}
	}
	return c, rc
}

type countingRoundTripper struct {
	rt http.RoundTripper
	rc *RequestCounter
}

func (c countingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	verb := req.Method
	if req.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	c.rc.mu.Lock()
	c.rc.counts[verb+" "+resourceOf(req)]++
	c.rc.mu.Unlock()
	return c.rt.RoundTrip(req)
}

// requestInfo parses API paths as the API server does.
var requestInfo = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// resourceOf returns the resource of an API request, with its subresource
// (/api/v1/namespaces/ns/services/x -> services, .../networks/x/status ->
// networks/status); the path for a non-resource request.
func resourceOf(req *http.Request) string {
	info, err := requestInfo.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return req.URL.Path
	}
	if info.Subresource != "" {
		return info.Resource + "/" + info.Subresource
	}
	return info.Resource
}

// Writes returns the number of mutating requests (POST, PUT, PATCH, DELETE)
// on resource ("" for every resource but events).
func (r *RequestCounter) Writes(resource string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, v := range r.counts {
		verb, res, _ := strings.Cut(k, " ")
		switch verb {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue
		}
		if (resource == "" && res != "events") || res == resource {
			n += v
		}
	}
	return n
}

// Count returns the number of requests of verb on resource.
func (r *RequestCounter) Count(verb, resource string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[verb+" "+resource]
}

// Reset zeroes every count.
func (r *RequestCounter) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = map[string]int{}
}

// String lists the counts, for failure messages.
func (r *RequestCounter) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for k, v := range r.counts {
		lines = append(lines, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(lines)
	return strings.Join(lines, ", ")
}
