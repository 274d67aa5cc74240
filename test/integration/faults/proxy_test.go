package faults

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// proxy is a TCP proxy on 127.0.0.1 in front of an API server. TLS passes
// through it untouched (the client keeps verifying the API server's
// certificate, issued for 127.0.0.1).
//
// BlackHole stops it from forwarding, without closing anything: every
// connection open at that moment, and every connection accepted until
// Restore, has its bytes read and dropped in both directions, as on a
// network that loses every packet. Restore forwards again for new
// connections; the black-holed ones stay black-holed until their client
// gives up and closes them (their streams lost bytes: as after a NAT or
// conntrack reset), which is what a client must notice on its own.
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu         sync.Mutex
	blackholed bool
	conns      map[*proxyConn]struct{}
	holed      []*proxyConn // the connections open at the last BlackHole
	wg         sync.WaitGroup

	// toServer counts the bytes forwarded from clients to the server.
	toServer atomic.Int64
}

type proxyConn struct {
	client, server net.Conn // server is nil for a connection born black-holed
	dead           atomic.Bool
}

// newProxy starts a proxy to the API server of c; it is closed when the
// test ends.
func newProxy(t testing.TB, c *rest.Config) *proxy {
	t.Helper()
	u, err := url.Parse(c.Host)
	if err != nil || u.Host == "" {
		t.Fatalf("API server address %q: %v", c.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: u.Host, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// config returns a copy of c that reaches the API server through the proxy.
func (p *proxy) config(c *rest.Config) *rest.Config {
	out := rest.CopyConfig(c)
	out.Host = "https://" + p.ln.Addr().String()
	return out
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		pc := &proxyConn{client: client}
		p.mu.Lock()
		dead := p.blackholed
		p.mu.Unlock()
		if !dead {
			if pc.server, err = net.Dial("tcp", p.target); err != nil {
				p.t.Logf("proxy: dialing the API server: %v", err)
				client.Close()
				continue
			}
		}
		p.mu.Lock()
		if p.conns == nil { // closed
			p.mu.Unlock()
			p.drop(pc)
			return
		}
		if p.blackholed {
			pc.dead.Store(true)
		}
		p.conns[pc] = struct{}{}
		p.wg.Add(1)
		go p.pipe(pc, pc.client, pc.server, &p.toServer)
		if pc.server != nil {
			p.wg.Add(1)
			go p.pipe(pc, pc.server, pc.client, nil)
		}
		p.mu.Unlock()
	}
}

// pipe copies from src to dst (dst nil: drops everything) until either
// side closes; then it closes the connection's both sides.
func (p *proxy) pipe(pc *proxyConn, src, dst net.Conn, count *atomic.Int64) {
	defer p.wg.Done()
	defer p.drop(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && dst != nil && !pc.dead.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if count != nil {
				count.Add(int64(n))
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.t.Logf("proxy: %v", err)
			}
			return
		}
	}
}

// drop closes both sides of pc and forgets it.
func (p *proxy) drop(pc *proxyConn) {
	pc.client.Close()
	if pc.server != nil {
		pc.server.Close()
	}
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// BlackHole stops forwarding on every open connection and on the ones
// accepted until Restore.
func (p *proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackholed = true
	p.holed = p.holed[:0]
	for pc := range p.conns {
		pc.dead.Store(true)
		p.holed = append(p.holed, pc)
	}
}

// Restore forwards new connections again.
func (p *proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackholed = false
}

// HoledOpen returns how many of the connections that were open at the
// last BlackHole are still open: the client has not noticed them yet.
func (p *proxy) HoledOpen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pc := range p.holed {
		if _, ok := p.conns[pc]; ok {
			n++
		}
	}
	return n
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for pc := range conns {
		pc.client.Close()
		if pc.server != nil {
			pc.server.Close()
		}
	}
	p.wg.Wait()
}
