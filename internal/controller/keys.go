package controller

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
)

// ObjectKey returns the namespace/name key of a namespaced object handed to
// an informer event handler: cache.DeletionHandlingObjectToName's key (the
// object's, or the Key of a cache.DeletedFinalStateUnknown tombstone), plus
// what it lacks: nil and nil pointers are errors instead of panics, and a
// tombstone whose Key is no valid key falls back to its last known object.
//
// It returns an error, never a key, for what cannot name a namespaced
// object: nil (also a nil pointer), something without object metadata, a
// namespace that is not a DNS label or a name that is not a DNS subdomain
// (the API server admits no other). A sync handed such a key could only
// look up nothing, so handlers report and skip it.
func ObjectKey(obj any) (cache.ObjectName, error) {
	if isNil(obj) {
		return cache.ObjectName{}, fmt.Errorf("no object (%T)", obj)
	}
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err == nil {
		err = CheckKey(key)
	}
	if err == nil {
		return key, nil
	}
	tomb, ok := obj.(cache.DeletedFinalStateUnknown)
	if !ok {
		return cache.ObjectName{}, fmt.Errorf("%T: %w", obj, err)
	}
	if isNil(tomb.Obj) {
		return cache.ObjectName{}, fmt.Errorf("tombstone key %q: %w; no object", tomb.Key, err)
	}
	objKey, objErr := cache.ObjectToName(tomb.Obj)
	if objErr == nil {
		objErr = CheckKey(objKey)
	}
	if objErr != nil {
		return cache.ObjectName{}, fmt.Errorf("tombstone key %q: %w; its object %T: %w", tomb.Key, err, tomb.Obj, objErr)
	}
	return objKey, nil
}

// isNil reports whether obj is nil or a nil pointer.
func isNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// CheckKey returns an error unless key can name a namespaced object: its
// namespace a DNS label, its name a DNS subdomain.
func CheckKey(key cache.ObjectName) error {
	if msgs := validation.IsDNS1123Label(key.Namespace); len(msgs) > 0 {
		return fmt.Errorf("invalid namespace %q in key %q: %s", key.Namespace, key.String(), strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(key.Name); len(msgs) > 0 {
		return fmt.Errorf("invalid name %q in key %q: %s", key.Name, key.String(), strings.Join(msgs, "; "))
	}
	return nil
}
