package framework

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

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
	c.rc.counts[verb+" "+resourceOf(req.URL.Path)]++
	c.rc.mu.Unlock()
	return c.rt.RoundTrip(req)
}

// resourceOf returns the resource of an API path: /api/v1/namespaces/ns/services/x -> services.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// Skip the group/version prefix: api/v1 or apis/group/version.
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return "namespaces"
	}
	res := parts[0]
	if len(parts) >= 3 {
		res += "/" + parts[2] // subresource
	}
	return res
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
