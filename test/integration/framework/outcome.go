package framework

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Outcome is what a fault test counts once things settled, and must find
// zero of: Services that asked for an Ingress and lack it, or have a wrong
// one (lost); Ingresses controlled by a Service that asks for none (extra);
// Ingresses created more than once (duplicated); writes by a replica that
// did not hold the Lease (non-leader); foreign Ingresses changed or deleted
// (touched). Problems says which.
type Outcome struct {
	Wanted, Lost, Extra, Duplicated, NonLeader, Touched int
	Problems                                            []string
}

// IngressWant is what a Service's Ingress must be: controlled by the
// Service of UID and, when Check is set, accepted by it.
type IngressWant struct {
	UID   types.UID
	Check func(*networkingv1.Ingress) error
}

// CompareIngresses counts lost, extra and touched Ingresses of one
// namespace: want names every Service that should have its Ingress, foreign
// the Ingresses (name -> resourceVersion) nobody but the test may write.
func CompareIngresses(ings []networkingv1.Ingress, want map[string]IngressWant, foreign map[string]string) Outcome {
	o := Outcome{Wanted: len(want)}
	byName := map[string]*networkingv1.Ingress{}
	for i := range ings {
		byName[ings[i].Name] = &ings[i]
	}
	for name, w := range want {
		if _, isForeign := foreign[name]; isForeign {
			continue
		}
		ing := byName[name]
		err := fmt.Errorf("no Ingress")
		if ing != nil {
			if err = ControlledBy(ing, w.UID); err == nil && w.Check != nil {
				err = w.Check(ing)
			}
		}
		if err != nil {
			o.Lost++
			o.Problems = append(o.Problems, fmt.Sprintf("service %s: %v", name, err))
		}
	}
	for name, ing := range byName {
		if rv, isForeign := foreign[name]; isForeign {
			if ing.ResourceVersion != rv || len(ing.OwnerReferences) != 0 {
				o.Touched++
				o.Problems = append(o.Problems, fmt.Sprintf("foreign Ingress %s was changed: resourceVersion %s, want %s; owners %+v", name, ing.ResourceVersion, rv, ing.OwnerReferences))
			}
			continue
		}
		if _, ok := want[name]; !ok {
			if ref := metav1.GetControllerOf(ing); ref != nil && ref.Kind == "Service" {
				o.Extra++
				o.Problems = append(o.Problems, fmt.Sprintf("Ingress %s is controlled by Service %s (uid %s), which asks for none", name, ref.Name, ref.UID))
			}
		}
	}
	for name := range foreign {
		if byName[name] == nil {
			o.Touched++
			o.Problems = append(o.Problems, fmt.Sprintf("foreign Ingress %s was deleted", name))
		}
	}
	slices.Sort(o.Problems)
	return o
}

// CountCreates adds to Duplicated every name created more than once.
func (o *Outcome) CountCreates(creates map[string]int) {
	for name, n := range creates {
		if n > 1 {
			o.Duplicated++
			o.Problems = append(o.Problems, fmt.Sprintf("Ingress %s created %d times", name, n))
		}
	}
}

// Bad is the number of things counted that must be zero.
func (o Outcome) Bad() int { return o.Lost + o.Extra + o.Duplicated + o.NonLeader + o.Touched }

// String gives the counts, and the first problems.
func (o Outcome) String() string {
	s := fmt.Sprintf("%d wanted, %d lost, %d extra, %d duplicated, %d written by a non-leader, %d foreign touched",
		o.Wanted, o.Lost, o.Extra, o.Duplicated, o.NonLeader, o.Touched)
	if len(o.Problems) > 0 {
		s += ": " + strings.Join(o.Problems[:min(len(o.Problems), 10)], "; ")
	}
	return s
}
