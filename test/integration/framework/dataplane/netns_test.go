package dataplane

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m.Run)) }

func TestNamespaceLoopback(t *testing.T) {
	Require(t)
	t.Log(Isolation())
	for _, addr := range []string{"127.0.0.1:0", net.JoinHostPort(BackendIP, "0")} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listening on %s: %v", addr, err)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatalf("dialing %s: %v", l.Addr(), err)
		}
		c.Close()
		l.Close()
	}
	// kube-apiserver needs a default route.
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(routes), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "lo" && f[1] == "00000000" {
			found = true
		}
	}
	if !found {
		t.Errorf("no default route via lo:\n%s", routes)
	}
}
