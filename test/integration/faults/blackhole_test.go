package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// annotate merges annotations into Service name (a nil value removes the
// key).
func str(s string) *string { return &s }

// TestWatchBlackholed: the connection between the manager and the API
// server stops carrying anything (a TCP proxy drops every byte, closing
// nothing) while Services are annotated, de-annotated, re-annotated,
// deleted and created and an Ingress is deleted behind the manager's back.
// The manager must notice the dead connection on its own (client-go's
// HTTP/2 health check), and once the network is back, converge.
func TestWatchBlackholed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube, ns := framework.Setup(t)
	p := newProxy(t, cfg)
	o := framework.ControllerOptions(ns, "ingress-manager")
	m := framework.StartManager(t, p.config(cfg), o)
	check := settled{kube: kube, ns: ns, logs: []func() string{m.Logs}}

	// 20 Services, the even ones annotated.
	for i := range 20 {
		svc := annotatedService(ns, i)
		if i%2 == 1 {
			delete(svc.Annotations, "ingress/http")
		}
		if _, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nothingLost(t, time.Minute, check)

	p.BlackHole()
	holed := time.Now()
	conns := p.HoledOpen()
	if conns == 0 {
		t.Fatal("the manager has no connection through the proxy")
	}
	name := func(i int) string { return annotatedService(ns, i).Name }
	changes := 0
	for i := 1; i < 10; i += 2 { // annotate 5
		framework.Annotate(t, kube, ns, name(i), map[string]*string{"ingress/http": str("true")})
		changes++
	}
	for i := 10; i < 16; i += 2 { // de-annotate 3
		framework.Annotate(t, kube, ns, name(i), map[string]*string{"ingress/http": nil})
		changes++
	}
	for _, i := range []int{0, 2} { // re-annotate 2 with other options
		framework.Annotate(t, kube, ns, name(i), map[string]*string{"ingress/host": str(fmt.Sprintf("moved-%d.example.org", i)), "ingress/path": str("/v2")})
		changes++
	}
	if err := kube.CoreV1().Services(ns).Delete(ctx, name(4), metav1.DeleteOptions{}); err != nil { // delete 1
		t.Fatal(err)
	}
	if err := kube.NetworkingV1().Ingresses(ns).Delete(ctx, name(6), metav1.DeleteOptions{}); err != nil { // lose 1 Ingress
		t.Fatal(err)
	}
	for i := 20; i < 23; i++ { // create 3
		if _, err := kube.CoreV1().Services(ns).Create(ctx, annotatedService(ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	changes += 5

	// client-go pings an idle HTTP/2 connection after 30s and closes it
	// when no answer comes within 15s.
	framework.Eventually(t, 3*time.Minute, "the manager to close its black-holed connections", func(context.Context) (bool, error) {
		return p.HoledOpen() == 0, nil
	})
	noticed := time.Since(holed)
	p.Restore()
	restored := time.Now()
	nothingLost(t, 2*time.Minute, check)
	t.Logf("counts: %d connections black-holed for %v until the manager closed them; %d changes made meanwhile; settled %v after the network came back; bytes to the API server: %d",
		conns, noticed.Round(time.Millisecond), changes, time.Since(restored).Round(time.Millisecond), p.toServer.Load())
}
