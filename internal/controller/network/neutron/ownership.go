package neutron

// Ownership: which Network a Neutron object belongs to comes from its tags
// alone (the UID, the managed-by value, the namespace and name). Every
// decision of whose an object is calls these; the description is prose.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

func (b *Backend) uidTag(uid types.UID) string { return UIDTagPrefix + string(uid) }
func (b *Backend) managedTag() string          { return ManagedByTagPrefix + b.managedBy }

// tags returns the tags that mark n's network and subnet as ours: the
// UID, the managed-by value, and the namespace and name. Which Network an
// object belongs to is read from these tags alone (owner): a description
// is prose for people, which anyone may edit, and an adopted network's
// is not ours.
func (b *Backend) tags(n network.Network) []string {
	tags := []string{b.uidTag(n.UID), b.managedTag()}
	if n.Namespace == "" {
		return tags
	}
	return append(tags, refTags(n)...)
}

// adoptTags returns the tags that mark an imported network or subnet as
// n's: the same as a created one's.
func (b *Backend) adoptTags(n network.Network) []string { return b.tags(n) }

// refTags returns the RefTagPrefix tags naming n's namespace and name.
func refTags(n network.Network) []string {
	// Parts short enough for the tag length of older Neutron releases.
	const part = maxTagLength - len(RefTagPrefix) - len("0=")
	var tags []string
	ref := n.Namespace + "/" + n.Name
	for i := 0; ref != ""; i++ {
		c := min(part, len(ref))
		tags = append(tags, RefTagPrefix+strconv.Itoa(i)+"="+ref[:c])
		ref = ref[c:]
	}
	return tags
}

// refFromTags returns the namespace and name the RefTagPrefix tags name,
// or empty strings when there are none (or they are incomplete).
func refFromTags(tags []string) (namespace, name string) {
	parts := map[int]string{}
	for _, t := range tags {
		rest, ok := strings.CutPrefix(t, RefTagPrefix)
		if !ok {
			continue
		}
		i, part, ok := strings.Cut(rest, "=")
		if n, err := strconv.Atoi(i); ok && err == nil && n >= 0 && n < len(tags) {
			parts[n] = part
		}
	}
	var ref strings.Builder
	for i := range len(parts) {
		p, ok := parts[i]
		if !ok {
			return "", ""
		}
		ref.WriteString(p)
	}
	namespace, name, ok := strings.Cut(ref.String(), "/")
	if !ok || namespace == "" || name == "" {
		return "", ""
	}
	return namespace, name
}
func (b *Backend) ownerTags(uid types.UID) string { return b.uidTag(uid) + "," + b.managedTag() }

// owns reports whether tags mark an object as uid's and ours.
func (b *Backend) owns(tags []string, uid types.UID) bool {
	return slices.Contains(tags, b.uidTag(uid)) && slices.Contains(tags, b.managedTag())
}

func uidFromTags(tags []string) types.UID {
	for _, t := range tags {
		if uid, ok := strings.CutPrefix(t, UIDTagPrefix); ok {
			return types.UID(uid)
		}
	}
	return ""
}

// maxTagLength is the tag length limit of older Neutron releases.
const maxTagLength = 60

// ValidateManagedBy checks a managed-by value as Neutron will take it in
// a tag.
func ValidateManagedBy(v string) error { return validateTag(ManagedByTagPrefix + v) }

func validateTag(tag string) error {
	if len(tag) > maxTagLength {
		return fmt.Errorf("tag %q is longer than 60 characters", tag)
	}
	if strings.Contains(tag, ",") {
		return fmt.Errorf("tag %q contains a comma", tag)
	}
	return nil
}

// untag replaces the tags of a network or subnet with existing minus ours
// (the UID, managed-by, ref and router tags), plus DetachedTag. A router
// interface stays: the network is left as it is, routed.
func (b *Backend) untag(ctx context.Context, resource, id string, existing []string) error {
	keep := slices.DeleteFunc(slices.Clone(existing), func(t string) bool {
		return strings.HasPrefix(t, UIDTagPrefix) || t == b.managedTag() || strings.HasPrefix(t, RefTagPrefix) || t == DetachedTag ||
			strings.HasPrefix(t, RouterTagPrefix)
	})
	keep = append(keep, DetachedTag)
	ctx, cancel := b.request(ctx)
	defer cancel()
	if _, err := attributestags.ReplaceAll(ctx, b.client, resource, id, attributestags.ReplaceAllOpts{Tags: keep}).Extract(); err != nil {
		return classify("untag "+strings.TrimSuffix(resource, "s")+" "+id, err)
	}
	return nil
}

// claim marks network id as uid's, race-free against another claim of
// it (two Networks importing it at once, or two managers): it adds uid's
// tag alone (Neutron adds one tag without touching the others) and reads
// the network's tags back. Another Network's or controller's mark there
// is a claim that came first, or at once: this one yields (removes its
// tag) with a transient error, and its retry finds the winner's tags, a
// permanent refusal. (Neutron's If-Match revision_number precondition
// would do it in one request, but its tag API does not honour it: Zed
// answers 500.)
func (b *Backend) claim(ctx context.Context, op, id string, uid types.UID) error {
	tag := b.uidTag(uid)
	rctx, cancel := b.request(ctx)
	err := attributestags.Add(rctx, b.client, "networks", id, tag).ExtractErr()
	cancel()
	if err != nil {
		return classify("claim network "+id, err)
	}
	rctx, cancel = b.request(ctx)
	tags, err := attributestags.List(rctx, b.client, "networks", id).Extract()
	cancel()
	if err != nil {
		return classify("claim network "+id, err)
	}
	other := b.checkNotOthers(tags, uid)
	if other == nil {
		return nil
	}
	rctx, cancel = b.request(ctx)
	err = attributestags.Delete(rctx, b.client, "networks", id, tag).ExtractErr()
	cancel()
	if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return classify("yield network "+id, err)
	}
	return network.Transient(op, samplecrdv1.ReasonBackendRejected, fmt.Errorf("claimed at the same time by another: %w (retried)", other))
}

// checkNotOthers fails when tags mark an object as another Network's or
// another controller's.
//
// Every UID tag counts, not the first alone: while two Networks claim one
// network at once it carries both, in the order Neutron lists them, and
// each claimant must see the other's.
func (b *Backend) checkNotOthers(tags []string, uid types.UID) error {
	for _, t := range tags {
		if owner, ok := strings.CutPrefix(t, UIDTagPrefix); ok && types.UID(owner) != uid {
			return fmt.Errorf("it belongs to another Network (tag %s%s): a network is never taken from its owner; import another network, or delete that Network first", UIDTagPrefix, owner)
		}
	}
	for _, t := range tags {
		if strings.HasPrefix(t, ManagedByTagPrefix) && t != b.managedTag() {
			return fmt.Errorf("another controller manages it (tag %s, ours is %s): a network is never taken from its owner; use managementPolicy: Unmanaged to observe it", t, b.managedTag())
		}
	}
	return nil
}

func containsAll(have, want []string) bool {
	for _, t := range want {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}
