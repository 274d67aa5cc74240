package neutron

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kube-sample/controller-manager/internal/controller/network"
)

// TestDescriptions: our text naming the Network stays first, the
// Network's own after it; an edited text is still ours (an interrupted
// create is found again whatever the Network's text); a long namespace
// and name fall back to the short marker so the Network's text fits
// Neutron's 255 characters; an adopted object's description is the
// Network's text alone; the Network's text reads back the same.
func TestDescriptions(t *testing.T) {
	b := &Backend{managedBy: "cm"}
	n := network.Network{UID: "u-1", Namespace: "team-a", Name: "build"}
	text := "team a's build network"
	d := b.describeWith(n, &text, true)
	if d != "Kubernetes Network team-a/build (uid u-1), managed by cm: team a's build network" {
		t.Errorf("describeWith = %q", d)
	}
	if !b.describes(d, n) || !b.describes(b.describeWith(n, nil, true), n) || !b.describes(b.description(n), n) {
		t.Errorf("describes refuses our own descriptions")
	}
	if b.describes(d, network.Network{UID: "u-2", Namespace: "team-a", Name: "build"}) || b.describes(text, n) ||
		b.describes(b.description(n)+"x", n) {
		t.Errorf("describes takes another UID's, a foreign or an extended marker")
	}
	if got := b.userDescription(d); got != text {
		t.Errorf("userDescription(%q) = %q, want %q", d, got, text)
	}
	if got := b.userDescription(b.description(n)); got != "" {
		t.Errorf("userDescription of our bare marker = %q", got)
	}
	if got := b.describeWith(n, &text, false); got != text || b.userDescription(got) != text {
		t.Errorf("an adopted object's description = %q", got)
	}
	long := network.Network{UID: "u-1", Namespace: strings.Repeat("n", 63), Name: strings.Repeat("m", 200)}
	long128 := strings.Repeat("t", 128)
	if d := b.describeWith(long, &long128, true); len(d) > maxNameLength || !strings.HasSuffix(d, ": "+long128) || !b.describes(d, long) ||
		b.userDescription(d) != long128 {
		t.Errorf("a long Network's description %q (%d characters)", d, len(d))
	}
	// Neutron counts characters, not bytes: the user's text of three-byte
	// characters is kept whole, and never cut inside a character.
	wide := strings.Repeat("網", 128)
	if d := b.describeWith(long, &wide, true); utf8.RuneCountInString(d) > maxNameLength || !utf8.ValidString(d) ||
		!strings.HasSuffix(d, ": "+wide) || b.userDescription(d) != wide {
		t.Errorf("a long Network's description of wide characters %q (%d characters)", d, utf8.RuneCountInString(d))
	}
	if got := truncate(strings.Repeat("網", 300), maxNameLength); utf8.RuneCountInString(got) != maxNameLength || !utf8.ValidString(got) {
		t.Errorf("truncate cut %d characters, valid UTF-8 %v; want %d", utf8.RuneCountInString(got), utf8.ValidString(got), maxNameLength)
	}
}

// TestTagsAndMarks: the user's tags replace the others' user tags but
// never our marks; unset, the others' tags stay; the router mark is set,
// moved and removed alone.
func TestTagsAndMarks(t *testing.T) {
	existing := []string{"k8s-network-uid=u", "managed-by=cm", "rogue", "team=a"}
	if got := withTags(existing, nil, []string{"team=b"}); !slices.Equal(got, []string{"k8s-network-uid=u", "managed-by=cm", "team=b"}) {
		t.Errorf("withTags with user tags = %v", got)
	}
	if got := withTags(existing, []string{"managed-by=cm", "k8s-ref-0=a/b"}, nil); !slices.Equal(got, append(slices.Clone(existing), "k8s-ref-0=a/b")) {
		t.Errorf("withTags without user tags = %v", got)
	}
	if got := userTags(append(existing, RouterTagPrefix+"r1", DetachedTag)); !slices.Equal(got, []string{"rogue", "team=a"}) {
		t.Errorf("userTags = %v", got)
	}
	marked := withMark(existing, "r1")
	if routerMark(marked) != "r1" || routerMark(withMark(marked, "r2")) != "r2" || routerMark(withMark(marked, "")) != "" ||
		!slices.Equal(withMark(marked, ""), existing) {
		t.Errorf("router marks: %v", marked)
	}
}
