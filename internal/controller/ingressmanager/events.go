package ingressmanager

import (
	"cmp"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// Event reasons on the Service (besides the InvalidError reasons of bad
// annotations).
const (
	// ReasonIngressCreated (Normal): the Service's Ingress was created.
	ReasonIngressCreated = "IngressCreated"
	// ReasonIngressUpdated (Normal): the Ingress was brought back to what
	// the Service's annotations say.
	ReasonIngressUpdated = "IngressUpdated"
	// ReasonIngressDeleted (Normal): the Ingress was deleted, the message
	// says why (annotation removed, moved to an HTTPRoute, Service gone).
	ReasonIngressDeleted = "IngressDeleted"
	// ReasonIngressExists (Warning): a same-named Ingress not controlled by
	// the Service is in the way; it is left untouched.
	ReasonIngressExists = "IngressExists"
	// ReasonHTTPRouteCreated (Normal): the Service's HTTPRoute was created.
	ReasonHTTPRouteCreated = "HTTPRouteCreated"
	// ReasonHTTPRouteUpdated (Normal): the HTTPRoute was brought back to
	// what the Service's annotations say.
	ReasonHTTPRouteUpdated = "HTTPRouteUpdated"
	// ReasonHTTPRouteDeleted (Normal): the HTTPRoute was deleted, the
	// message says why.
	ReasonHTTPRouteDeleted = "HTTPRouteDeleted"
	// ReasonHTTPRouteExists (Warning): a same-named HTTPRoute not controlled
	// by the Service is in the way; it is left untouched.
	ReasonHTTPRouteExists = "HTTPRouteExists"
	// ReasonGatewayAPINotInstalled (Warning): the Service asks for a Gateway
	// but the cluster does not serve HTTPRoutes; it keeps an Ingress
	// meanwhile.
	ReasonGatewayAPINotInstalled = "GatewayAPINotInstalled"
	// ReasonHTTPRouteNotAccepted (Warning) carries the Gateway's
	// Accepted=False condition of the route; the Ingress stays.
	ReasonHTTPRouteNotAccepted = "HTTPRouteNotAccepted"
	// ReasonHTTPRouteRefsNotResolved (Warning) carries the Gateway's
	// ResolvedRefs=False condition of the route; the route does not serve,
	// so the Ingress stays, in external-dns.
	ReasonHTTPRouteRefsNotResolved = "HTTPRouteRefsNotResolved"
	// ReasonWaitingForHTTPRoute (Normal): the Ingress is kept until the
	// route that replaces it serves (its Gateway accepted it and resolved
	// its references, for its current generation) and --ingress-move-settle
	// passed.
	ReasonWaitingForHTTPRoute = "WaitingForHTTPRoute"
	// ReasonCarriedToHTTPRoute (Normal): the HTTPRoute carries keys of
	// ingress/annotations, the message says which and as what (see
	// docs/reference/translations.md), which it leaves off as
	// acknowledged, and which extended features it uses that the Gateway's
	// class does not say it supports.
	ReasonCarriedToHTTPRoute = "CarriedToHTTPRoute"
	// ReasonWaitingForIngress (Normal): the HTTPRoute is kept until the
	// Ingress that replaces it serves (has an address) and
	// --ingress-move-settle passed.
	ReasonWaitingForIngress = "WaitingForIngress"
)

// eventObject is what Events are recorded on: a Service, or a user's
// Ingress moving to an HTTPRoute (each kind with notes of its own).
type eventObject interface {
	metav1.Object
	runtime.Object
}

// report collects the Events one sync has to say about a Service.
type report struct {
	events []event
	// version is the Service version the events are of when they name no
	// other; empty: the Service's as read. The sync's own write of the
	// Service moves it on, so that the version that write makes does not
	// tell the same things again.
	version string
}

type event struct {
	eventType, reason, message string
	// id tells when the same reason says something new: the Service's
	// version is part of it, plus what the caller passes.
	id string
	// always: a write, told each time it happens, never remembered.
	always bool
}

func (r *report) warn(reason, id, message string) {
	r.events = append(r.events, event{corev1.EventTypeWarning, reason, message, id, false})
}

func (r *report) normal(reason, id, message string) {
	r.events = append(r.events, event{corev1.EventTypeNormal, reason, message, id, false})
}

// wrote tells of a write (Normal), each time.
func (r *report) wrote(reason, message string) {
	r.events = append(r.events, event{corev1.EventTypeNormal, reason, message, "", true})
}

// notes sends each Event of a Service once per change: a resync looks at
// the Service again but does not repeat what it said.
type notes struct {
	recorder record.EventRecorder
	mu       sync.Mutex
	// sent holds what was said of each Service, as reason and id: one
	// reason may say several things at once (two Gateway controllers
	// refusing one route).
	sent map[cache.ObjectName]sets.Set[string]
}

// publish records the events of r not sent already. After a complete sync
// it forgets those the sync of svc no longer reports (so they are said
// again if they come back); after one that stopped early (the Service being
// deleted, the Gateway API's answer awaited) it forgets nothing.
func (n *notes) publish(svc eventObject, r *report, complete bool) {
	key := cache.MetaObjectToName(svc)
	n.mu.Lock()
	before := n.sent[key]
	now := make(sets.Set[string], len(r.events))
	if !complete {
		now = now.Union(before)
	}
	var send []event
	for _, e := range r.events {
		if e.always {
			send = append(send, e)
			continue
		}
		version := cmp.Or(e.id, r.version, svc.GetResourceVersion())
		id := strings.Join([]string{e.reason, string(svc.GetUID()), version, e.message}, "/")
		if !before.Has(id) && !now.Has(id) {
			send = append(send, e)
		}
		now.Insert(id)
	}
	if len(now) == 0 {
		delete(n.sent, key)
	} else {
		n.sent[key] = now
	}
	n.mu.Unlock()
	for _, e := range send {
		n.recorder.Event(svc, e.eventType, e.reason, e.message)
	}
}

// has reports whether events were sent for key that may still be held
// (publish forgets them once a complete report has none).
func (n *notes) has(key cache.ObjectName) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent[key].Len() > 0
}

func (n *notes) forget(key cache.ObjectName) {
	n.mu.Lock()
	delete(n.sent, key)
	n.mu.Unlock()
}
