package neutrontest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
)

// AccessLog reads the requests Neutron itself logged (its neutron.wsgi
// access log lines in neutron-server.log) from a point on: counts that do
// not depend on our client's own bookkeeping.
type AccessLog struct {
	cloud  *Cloud
	path   string
	offset int64
}

// Request is one line of Neutron's access log.
type Request struct {
	Method, Path string
	Status       int
	// UserID is the authenticated caller's Keystone user ID ("" when
	// Neutron refused the token before knowing it).
	UserID string
}

func (r Request) String() string { return fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status) }

// IsList reports whether r is a request of the backend's List for
// managed-by value managedBy: networks or subnets filtered by that tag
// alone (or, with a router, the project's router interfaces: any
// managed-by value's).
func (r Request) IsList(managedBy string) bool {
	p, err := url.QueryUnescape(r.Path)
	if err != nil {
		p = r.Path
	}
	if r.Method == "GET" && strings.HasPrefix(p, "/v2.0/ports?") && strings.Contains(p, "device_owner=network:router_interface") &&
		!strings.Contains(p, "fixed_ips") {
		return true
	}
	return r.Method == "GET" && strings.Contains(p, "tags="+neutron.ManagedByTagPrefix+managedBy) &&
		!strings.Contains(p, neutron.UIDTagPrefix)
}

// accessLine matches a neutron.wsgi access log line: its request context
// ([None req-<id> <user> <project> ...] or [-]), the client address, the
// request line and the status.
var accessLine = regexp.MustCompile(`neutron\.wsgi \[([^\]]*)\] \S+ "(\S+) (\S+) HTTP/[0-9.]+" status: (\d+)`)

// AccessLog returns Neutron's access log from its current end on, once
// every request answered before the call is in it (see Reset): Neutron
// writes a request's line after its answer, so a line of a request made
// just before would otherwise land after the start and be counted.
func (c *Cloud) AccessLog() (*AccessLog, error) {
	path := filepath.Join(c.Dir, "neutron-server.log")
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("neutron's access log: %w", err)
	}
	l := &AccessLog{cloud: c, path: path, offset: fi.Size()}
	if err := l.Reset(context.Background()); err != nil {
		return nil, fmt.Errorf("neutron's access log: %w", err)
	}
	return l, nil
}

// Requests returns the requests Neutron logged since l was made (or last
// reset) by the user userID ("" for every caller). It first makes a request
// of its own and waits (at most a minute) until Neutron has logged it, so
// every request answered before the call is in the log.
func (l *AccessLog) Requests(ctx context.Context, userID string) ([]Request, error) {
	if err := l.sync(ctx); err != nil {
		return nil, err
	}
	all, err := l.read()
	if err != nil {
		return nil, err
	}
	var out []Request
	for _, r := range all {
		if (userID == "" || r.UserID == userID) && !strings.Contains(r.Path, syncMarker) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Reset moves l to the log's current end.
func (l *AccessLog) Reset(ctx context.Context) error {
	if err := l.sync(ctx); err != nil {
		return err
	}
	fi, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	l.offset = fi.Size()
	return nil
}

const syncMarker = "access-log-sync-"

// sync lists networks by a name no one uses, as the admin, and waits for
// the request's line in the log.
func (l *AccessLog) sync(ctx context.Context) error {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	marker := syncMarker + hex.EncodeToString(b)
	admin, err := l.cloud.adminClient()
	if err != nil {
		return err
	}
	if _, err := networks.List(admin, networks.ListOpts{Name: marker}).AllPages(ctx); err != nil {
		return fmt.Errorf("marking neutron's access log: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		reqs, err := l.read()
		if err != nil {
			return false, err
		}
		for _, r := range reqs {
			if strings.Contains(r.Path, marker) {
				return true, nil
			}
		}
		return false, nil
	})
}

// read parses the log from l's offset.
func (l *AccessLog) read() ([]Request, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return nil, err
	}
	var out []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := accessLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		status, _ := strconv.Atoi(m[4])
		r := Request{Method: m[2], Path: m[3], Status: status}
		// [None req-<id> <user> <project> <domain>...]; [-] before auth.
		fields := strings.Fields(strings.TrimPrefix(m[1], "None "))
		if len(fields) >= 2 && strings.HasPrefix(fields[0], "req-") {
			r.UserID = fields[1]
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
