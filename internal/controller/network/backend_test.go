package network

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

func TestErrorClassification(t *testing.T) {
	perm := Permanent("create subnet", samplecrdv1.ReasonCIDROverlap, errors.New("overlaps"))
	trans := Transient("list networks", samplecrdv1.ReasonBackendUnavailable, context.DeadlineExceeded)
	for _, tc := range []struct {
		err       error
		permanent bool
		reason    string
		msg       string
	}{
		{perm, true, samplecrdv1.ReasonCIDROverlap, "create subnet: overlaps"},
		{fmt.Errorf("sync: %w", perm), true, samplecrdv1.ReasonCIDROverlap, "sync: create subnet: overlaps"},
		{trans, false, samplecrdv1.ReasonBackendUnavailable, "list networks: context deadline exceeded"},
		{errors.New("unclassified"), false, samplecrdv1.ReasonBackendUnavailable, "unclassified"},
	} {
		if IsPermanent(tc.err) != tc.permanent || Reason(tc.err) != tc.reason || tc.err.Error() != tc.msg {
			t.Errorf("%v: IsPermanent %v, Reason %q; want %v, %q, message %q", tc.err, IsPermanent(tc.err), Reason(tc.err), tc.permanent, tc.reason, tc.msg)
		}
	}
	if !errors.Is(trans, context.DeadlineExceeded) {
		t.Error("Error does not unwrap")
	}
	if nf := fmt.Errorf("get: %w", ErrNotFound); !IsNotFound(nf) || IsPermanent(nf) {
		t.Error("not-found classification")
	}
}

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		cidr bool
		want bool
	}{
		{"10.0.0.0/8", "10.0.0.0/8", true, true},
		{"fd00:0::/64", "fd00::/64", true, true},
		{"10.0.0.0/8", "10.0.0.0/16", true, false},
		{"", "10.0.0.0/8", true, false},
		{"FD00::1", "fd00::1", false, true},
		{"10.0.0.1", "10.0.0.2", false, false},
		{"bogus", "bogus", false, true},
	} {
		got := SameIP(tc.a, tc.b)
		if tc.cidr {
			got = SameCIDR(tc.a, tc.b)
		}
		if got != tc.want {
			t.Errorf("Same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDesiredAndNames(t *testing.T) {
	n := &samplecrdv1.Network{Spec: samplecrdv1.NetworkSpec{CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}}
	n.Namespace, n.Name, n.UID = "default", "example-network", "uid-1"
	want := Network{UID: "uid-1", Namespace: "default", Name: "example-network", CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}
	if got := Desired(n); !reflect.DeepEqual(got, want) {
		t.Errorf("Desired = %+v", got)
	}
	if got := DisplayName("default", "example-network"); got != "k8s-default-example-network" {
		t.Errorf("DisplayName = %q", got)
	}
}
