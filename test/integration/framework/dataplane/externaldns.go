package dataplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// ExternalDNSOptions configure StartExternalDNS.
type ExternalDNSOptions struct {
	// Binary is the external-dns executable; empty: <repo>/bin/external-dns.
	Binary string
	// Provider is the URL of its webhook provider (a DNSRecorder's URL).
	Provider string
	// Sources are its --source flags, e.g. ingress, gateway-httproute.
	Sources []string
	// Namespace limits its sources (and the Gateways of routes) to one
	// namespace.
	Namespace string
	// DomainFilter limits the records it manages to a domain.
	DomainFilter string
	// Interval is its --interval; it also runs on the sources' events.
	// 0: one second.
	Interval time.Duration
}

// ExternalDNS is a running external-dns process (bin/external-dns, built
// by hack/build-tools.sh) watching the API server of the config it was
// started with, with the TXT registry and the sync policy.
type ExternalDNS struct {
	proc *framework.Process
	dir  string
	stop sync.Once
}

// StartExternalDNS starts external-dns against cfg's API server with the
// webhook provider at o.Provider. Stop it with Stop.
func StartExternalDNS(cfg *rest.Config, o ExternalDNSOptions) (*ExternalDNS, error) {
	if o.Binary == "" {
		root, err := framework.RepoRoot()
		if err != nil {
			return nil, err
		}
		o.Binary = filepath.Join(root, "bin", "external-dns")
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("%s not found: run `make tools` (hack/build-tools.sh external-dns) first", o.Binary)
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	dir, err := os.MkdirTemp("", "external-dns-")
	if err != nil {
		return nil, err
	}
	x := &ExternalDNS{dir: dir}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := framework.WriteKubeconfig(cfg, kubeconfig); err != nil {
		x.cleanup()
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--provider=webhook",
		"--webhook-provider-url=" + o.Provider,
		"--registry=txt",
		"--txt-owner-id=controller-manager-test",
		"--policy=sync",
		"--interval=" + o.Interval.String(),
		"--events",
		"--min-event-sync-interval=100ms",
		"--metrics-address=127.0.0.1:0",
		"--log-level=debug",
	}
	for _, s := range o.Sources {
		args = append(args, "--source="+s)
	}
	if o.Namespace != "" {
		args = append(args, "--namespace="+o.Namespace, "--gateway-namespace="+o.Namespace)
	}
	if o.DomainFilter != "" {
		args = append(args, "--domain-filter="+o.DomainFilter)
	}
	// The same environment as Traefik's: KUBECONFIG, no in-cluster variables.
	x.proc, err = framework.StartProcess("external-dns", o.Binary, args, framework.ProcessOptions{
		Dir: dir, Env: traefikEnv(kubeconfig), LogPath: filepath.Join(dir, "external-dns.log"), SysProcAttr: processAttr()})
	if err != nil {
		x.cleanup()
		return nil, err
	}
	return x, nil
}

// Exited reports whether external-dns has ended (it should not while the
// test runs) and why.
func (x *ExternalDNS) Exited() (bool, error) { return x.proc.Exited() }

// Logs returns the end of external-dns's log, for failure messages.
func (x *ExternalDNS) Logs() string { return x.proc.Logs(64 << 10) }

// Stop terminates external-dns and removes its directory.
func (x *ExternalDNS) Stop() {
	x.stop.Do(func() {
		if x.proc != nil {
			_ = x.proc.Stop(10 * time.Second)
		}
		x.cleanup()
	})
}

func (x *ExternalDNS) cleanup() { _ = os.RemoveAll(x.dir) }

// webhookMediaType is the media type of external-dns's webhook provider
// protocol, version 1 (its provider/webhook/api).
const webhookMediaType = "application/external.dns.webhook+json;version=1"

// Endpoint is a DNS record as external-dns's webhook protocol carries it
// (its endpoint.Endpoint in JSON).
type Endpoint struct {
	DNSName          string            `json:"dnsName,omitempty"`
	Targets          []string          `json:"targets,omitempty"`
	RecordType       string            `json:"recordType,omitempty"`
	SetIdentifier    string            `json:"setIdentifier,omitempty"`
	RecordTTL        int64             `json:"recordTTL,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	ProviderSpecific []json.RawMessage `json:"providerSpecific,omitempty"`
}

// changes is one ApplyChanges of the webhook protocol (external-dns's
// plan.Changes in JSON).
type changes struct {
	Create    []Endpoint `json:"create,omitempty"`
	UpdateOld []Endpoint `json:"updateOld,omitempty"`
	UpdateNew []Endpoint `json:"updateNew,omitempty"`
	Delete    []Endpoint `json:"delete,omitempty"`
}

// DNSChange is one ApplyChanges external-dns sent, with the zone as it was
// right after it (applied as one: a real provider's change batch).
type DNSChange struct {
	At time.Time
	// Summary lists the change's records as "+A host [targets]", "-A ...".
	Summary string
	// Records are every record of the zone after the change.
	Records []Endpoint
}

// Targets returns the targets of the record of name and type in the zone
// after the change, nil when there is none.
func (c DNSChange) Targets(name, recordType string) []string {
	return targetsOf(c.Records, name, recordType)
}

func targetsOf(records []Endpoint, name, recordType string) []string {
	for _, r := range records {
		if r.DNSName == name && r.RecordType == recordType {
			return r.Targets
		}
	}
	return nil
}

// DNSRecorder is a webhook provider for external-dns (GET / to negotiate,
// GET and POST /records, POST /adjustendpoints) holding one in-memory zone
// and recording every change, on 127.0.0.1.
type DNSRecorder struct {
	// URL is what external-dns's --webhook-provider-url takes.
	URL string

	domain   string
	srv      *http.Server
	mu       sync.Mutex
	records  []Endpoint
	changes  []DNSChange
	onChange func(DNSChange)
	// reads are the times external-dns read the zone: the start of each
	// of its runs (its TXT registry caches nothing by default), before it
	// reads its sources.
	reads []time.Time
}

// OnChange makes f be called with each change from now on, before
// external-dns gets its answer: what f checks holds while the change is
// being applied, before external-dns goes on.
func (r *DNSRecorder) OnChange(f func(DNSChange)) {
	r.mu.Lock()
	r.onChange = f
	r.mu.Unlock()
}

// StartDNSRecorder serves a zone for domain (the domain filter it
// negotiates) on a free 127.0.0.1 port; Close stops it.
func StartDNSRecorder(domain string) (*DNSRecorder, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &DNSRecorder{URL: "http://" + l.Addr().String(), domain: domain}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", r.negotiate)
	mux.HandleFunc("GET /records", r.list)
	mux.HandleFunc("POST /records", r.apply)
	mux.HandleFunc("POST /adjustendpoints", r.adjust)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

// Close stops serving.
func (r *DNSRecorder) Close() { _ = r.srv.Close() }

// Changes returns every change recorded so far, in order.
func (r *DNSRecorder) Changes() []DNSChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changes)
}

// ReadsAfter counts the reads of the zone by external-dns after t: each
// starts one of its runs, which reads its sources (its informers' caches)
// next and applies its changes (if any) before the next run starts. So
// once two reads came after t plus the time its informers take to see a
// write, a run that saw every object as it was at t has finished.
func (r *DNSRecorder) ReadsAfter(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.reads {
		if at.After(t) {
			n++
		}
	}
	return n
}

// Targets returns the targets of the record of name and type now.
func (r *DNSRecorder) Targets(name, recordType string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(targetsOf(r.records, name, recordType))
}

func (r *DNSRecorder) negotiate(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", webhookMediaType)
	_ = json.NewEncoder(w).Encode(map[string][]string{"include": {r.domain}})
}

func (r *DNSRecorder) list(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	r.reads = append(r.reads, time.Now())
	records := slices.Clone(r.records)
	r.mu.Unlock()
	if records == nil {
		records = []Endpoint{}
	}
	w.Header().Set("Content-Type", webhookMediaType)
	_ = json.NewEncoder(w).Encode(records)
}

func (r *DNSRecorder) adjust(w http.ResponseWriter, req *http.Request) {
	var eps []json.RawMessage
	if err := json.NewDecoder(req.Body).Decode(&eps); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", webhookMediaType)
	_ = json.NewEncoder(w).Encode(eps)
}

// apply applies a change batch as one, as DNS providers do: deletions and
// the old side of updates first, then creations and the new side; a
// record to delete that is not there, or to create that is, fails the
// whole batch (external-dns then retries).
func (r *DNSRecorder) apply(w http.ResponseWriter, req *http.Request) {
	var c changes
	if err := json.NewDecoder(req.Body).Decode(&c); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	records := slices.Clone(r.records)
	var summary []string
	var errs []error
	key := func(e Endpoint) string { return e.DNSName + "/" + e.RecordType + "/" + e.SetIdentifier }
	for _, e := range slices.Concat(c.Delete, c.UpdateOld) {
		i := slices.IndexFunc(records, func(x Endpoint) bool { return key(x) == key(e) })
		if i < 0 {
			errs = append(errs, fmt.Errorf("no record %s to delete", key(e)))
			continue
		}
		records = slices.Delete(records, i, i+1)
		summary = append(summary, fmt.Sprintf("-%s %s %v", e.RecordType, e.DNSName, e.Targets))
	}
	for _, e := range slices.Concat(c.UpdateNew, c.Create) {
		if slices.ContainsFunc(records, func(x Endpoint) bool { return key(x) == key(e) }) {
			errs = append(errs, fmt.Errorf("record %s exists already", key(e)))
			continue
		}
		records = append(records, e)
		summary = append(summary, fmt.Sprintf("+%s %s %v", e.RecordType, e.DNSName, e.Targets))
	}
	if err := errors.Join(errs...); err != nil {
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	r.records = records
	change := DNSChange{At: time.Now(), Summary: strings.Join(summary, "; "), Records: slices.Clone(records)}
	r.changes = append(r.changes, change)
	onChange := r.onChange
	r.mu.Unlock()
	if onChange != nil {
		onChange(change)
	}
	w.WriteHeader(http.StatusNoContent)
}
