package ingressmanager

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// owner is whom a move between an Ingress and an HTTPRoute is for: a
// Service, whose objects are those it controls, or a user's Ingress that
// opted in to move to an HTTPRoute made from it (migrate.go). It is the one
// home of "whose is this object" for a move: every step that writes asks
// owns.
type owner struct {
	// svc is the Service; nil for a migration.
	svc *corev1.Service
	// ing is the user's Ingress moving to a route; nil for a Service.
	ing *networkingv1.Ingress
	// fieldManager, for a migration, is the controller's: the route made
	// from ing is one its field manager wrote the marker of.
	fieldManager string
}

func serviceOwner(svc *corev1.Service) owner { return owner{svc: svc} }
func migrationOwner(ing *networkingv1.Ingress, fieldManager string) owner {
	return owner{ing: ing, fieldManager: fieldManager}
}

// object is the Service or the user's Ingress, as cached.
func (o owner) object() metav1.Object {
	if o.svc != nil {
		return o.svc
	}
	return o.ing
}

// owns reports whether obj is the owner's own, one a move may write: for
// a Service, an object it controls (its controller reference has the
// Service's UID); for a user's Ingress, the Ingress itself and the route
// made from it (isMigratedFrom).
func (o owner) owns(obj metav1.Object) bool {
	if o.svc != nil {
		return isControlledBy(obj, o.svc)
	}
	if o.ing == nil || obj == nil {
		return false
	}
	if _, ok := obj.(*networkingv1.Ingress); ok {
		return obj.GetUID() == o.ing.UID && obj.GetUID() != ""
	}
	return isMigratedFrom(obj, o.ing, o.fieldManager)
}

// subject names what moves, for a message: "the Service is", or, for a
// user's Ingress, "its traffic is".
func (o owner) subject() string {
	if o.svc != nil {
		return "the Service is"
	}
	return "its traffic is"
}

// settleKey is the key of the owner's settle times.
func (o owner) settleKey(parents bool) settleKey {
	return settleKey{svc: cache.MetaObjectToName(o.object()), parents: parents, migration: o.ing != nil}
}

// notOurs says, for a Warning, that live, of kind, is in the place of the
// owner's own object and is not its.
func (o owner) notOurs(kind string, live metav1.Object) string {
	if o.svc != nil {
		return fmt.Sprintf("%s %s/%s exists and is not controlled by this Service (%s)", kind, live.GetNamespace(), live.GetName(), controllerOf(live))
	}
	why := controllerOf(live)
	if v, ok := live.GetAnnotations()[AnnotationMigratedFrom]; ok && metav1.GetControllerOfNoCopy(live) == nil {
		if v == string(o.ing.UID) {
			why = fmt.Sprintf("its %s names this Ingress but was not written by this controller (field manager %s)", AnnotationMigratedFrom, quote(o.fieldManager))
		} else {
			why = fmt.Sprintf("its %s names another Ingress, uid %s", AnnotationMigratedFrom, quote(v))
		}
	} else if !ok {
		why += ", no " + AnnotationMigratedFrom
	}
	return fmt.Sprintf("%s %s/%s exists and was not made from this Ingress (%s)", kind, live.GetNamespace(), live.GetName(), why)
}

// isMigratedFrom reports whether route is the route made from the user's
// Ingress ing: its AnnotationMigratedFrom names ing's UID, the controller
// wrote it (fieldManager, the controller's, owns the annotation in the
// route's managedFields: the UID is no secret, anyone who reads the
// Ingress can forge the marker on a route of theirs), and nothing controls
// it (a Service's route that carries the annotation through its
// ingress/annotations stays the Service's). A route of the Ingress's name
// that is not is someone else's, and an Ingress deleted and made again
// under its name (another UID) does not own the old one's route.
func isMigratedFrom(route metav1.Object, ing *networkingv1.Ingress, fieldManager string) bool {
	if route == nil || ing == nil || ing.UID == "" || fieldManager == "" {
		return false
	}
	return route.GetAnnotations()[AnnotationMigratedFrom] == string(ing.UID) && metav1.GetControllerOfNoCopy(route) == nil &&
		ownsAnnotation(route, fieldManager, AnnotationMigratedFrom)
}
