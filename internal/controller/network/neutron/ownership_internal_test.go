package neutron

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestCheckNotOthersSeesEveryClaim: a network two Networks claim at once
// carries both UID tags, in whatever order Neutron lists them; each
// claimant sees the other's. TestConcurrentAdoptionsOneWins failed once so
// on the real Neutron (both adopted: the second claimant's read-back listed
// its own tag first, and only the first UID tag was looked at).
func TestCheckNotOthersSeesEveryClaim(t *testing.T) {
	b := &Backend{}
	ours, theirs := types.UID("79b061c9-0ccf-437a-bf0f-ce3f05579570"), types.UID("7e7c0002-bc22-4ede-8fef-7804b257ac31")
	for _, tags := range [][]string{
		{b.uidTag(ours), b.uidTag(theirs)},
		{b.uidTag(theirs), b.uidTag(ours)},
		{"user-tag", b.uidTag(theirs)},
	} {
		if err := b.checkNotOthers(tags, ours); err == nil {
			t.Errorf("checkNotOthers(%q) = nil, want the other Network's claim seen", tags)
		}
	}
	if err := b.checkNotOthers([]string{"user-tag", b.uidTag(ours)}, ours); err != nil {
		t.Errorf("checkNotOthers of our own claim alone = %v, want nil", err)
	}
}
