// Package ingressmanager keeps an Ingress (networking.k8s.io/v1) for every
// Service that carries the annotation ingress/http.
//
// The pure, side-effect-free core lives in desired.go and apply.go:
//
//   - Enabled tells whether a Service asks for an Ingress.
//   - Builder.Desired parses the Service's ingress/* annotations and computes
//     the Ingress it should have, or an *InvalidError (Reason + Message, meant
//     for a Warning Event on the Service) when an annotation is bad.
//   - ApplyConfiguration turns the desired Ingress into the server-side-apply
//     configuration holding exactly the fields this controller manages.
//   - NeedsUpdate compares a live Ingress with the desired one, looking only at
//     the fields the controller's field manager owns, so the controller writes
//     only when something it manages differs.
//   - IsControlledBy / ControllerOwner answer "is this Ingress ours?".
//
// Annotations understood on a Service:
//
//	ingress/http         enables; the value "false" (any case) disables
//	ingress/host         rule host; default: the --ingress-host-template
//	                     rendering (default "example.com"); "" means a rule
//	                     without host (matches every host)
//	ingress/path         path; default "/"
//	ingress/path-type    Prefix, Exact or ImplementationSpecific; default Prefix
//	ingress/port         Service port by number or name; default: port 80 if
//	                     present, else the port named "http", else the only port
//	ingress/class        spec.ingressClassName; default --ingress-class;
//	                     "" means no class (the cluster's default IngressClass)
//	ingress/tls-secret   adds spec.tls for the host with that Secret
//	ingress/annotations  JSON object of string annotations for the Ingress
//
// Values are trimmed of surrounding white space. An empty value of
// ingress/path, ingress/path-type, ingress/port, ingress/tls-secret or
// ingress/annotations means the default.
package ingressmanager
