// Package ingressmanager keeps an Ingress (networking.k8s.io/v1), or a
// Gateway API HTTPRoute, for every Service that carries the annotation
// ingress/http.
//
// The package reads top to bottom:
//
//   - intent.go: Builder.Parse reads a Service's ingress/* annotations and
//     ports, once per sync, into an Intent: its Target (none, Ingress or
//     HTTPRoute), host, path, port, class, TLS, Gateway, and every Problem
//     found. No annotation is read anywhere else. ingressonly.go holds the
//     table of ingress/annotations keys only an Ingress controller reads,
//     and which of them restrict access.
//   - render.go: Intent.Ingress and Intent.HTTPRoute are pure renderings of
//     it, or an *InvalidError listing the problems of that rendering.
//   - sync.go: the sync of one Service, a switch on the Target, and the
//     move between Ingress and HTTPRoute without a gap.
//   - write.go: the one write path of both kinds (create, server-side apply
//     of what changed, delete with preconditions).
//   - cutover.go: the DNS side of a move: the old object is withdrawn from
//     external-dns, drained, then deleted.
//   - events.go: the one Event path, each said once per change.
//   - controller.go and gateway.go: the handlers, and the HTTPRoute watch
//     that follows whether the cluster serves the Gateway API.
//
// The annotations, their defaults and the Event reasons are listed in
// docs/reference/annotations.md and docs/reference/reasons.md, generated
// from the Annotation* and Reason* constants.
package ingressmanager
