package controller

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
)

// ObjectKey returns the namespace/name key of a namespaced object handed to
// an informer event handler: the object itself, or the
// cache.DeletedFinalStateUnknown tombstone of a deleted one (its Key, or,
// when that is no valid key, the name of its last known object).
//
// It returns an error, never a key, for what cannot name a namespaced
// object: nil (also a nil pointer), something without object metadata, a
// namespace that is not a DNS label or a name that is not a DNS subdomain
// (the API server admits no other). A sync handed such a key could only
// look up nothing, so handlers report and skip it.
func ObjectKey(obj any) (cache.ObjectName, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		key, err := cache.ParseObjectName(tomb.Key)
		if err == nil {
			err = CheckKey(key)
		}
		if err == nil {
			return key, nil
		}
		objKey, objErr := metaKey(tomb.Obj)
		if objErr != nil {
			return cache.ObjectName{}, fmt.Errorf("tombstone key %q: %w; its object: %w", tomb.Key, err, objErr)
		}
		return objKey, nil
	}
	return metaKey(obj)
}

// metaKey returns the key of an object with metadata.
func metaKey(obj any) (cache.ObjectName, error) {
	if obj == nil {
		return cache.ObjectName{}, errors.New("no object")
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return cache.ObjectName{}, fmt.Errorf("nil %T", obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return cache.ObjectName{}, fmt.Errorf("%T has no object metadata: %w", obj, err)
	}
	key := cache.ObjectName{Namespace: m.GetNamespace(), Name: m.GetName()}
	if err := CheckKey(key); err != nil {
		return cache.ObjectName{}, fmt.Errorf("%T: %w", obj, err)
	}
	return key, nil
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
