package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// refusal is how hack/release.sh begins its refusal of a DIST it did not
// write.
const refusal = "release: DIST="

// TestReleaseRefusesADistItDidNotWrite: `make release DIST=<dir>` replaces
// the directory it writes to only when it is new, empty, or holds what a
// release writes and nothing else; any other directory (or a file) is
// refused, with a message, before anything is deleted. The script runs with
// MANIFESTS_ONLY=1 and a kubectl that fails, so that a DIST it takes stops
// it at once, after the replacement, without building anything.
func TestReleaseRefusesADistItDidNotWrite(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	earlier := []string{"SHA256SUMS", "BUILDINFO", "install.yaml", "controller-manager-0.0.0-old.1.tgz", "controller-manager-v0.0.0-old.1.oci.tar",
		"controller-manager-v0.0.0-old.1-linux-amd64.cdx.json"}
	for _, tc := range []struct {
		name    string
		files   []string // made in DIST ("x/" a directory); nil: DIST absent
		file    bool     // DIST is a file
		refused bool
	}{
		{name: "absent: taken"},
		{name: "empty: taken", files: []string{}},
		{name: "an earlier release's files: replaced", files: earlier},
		{name: "a file of the user's: refused, kept", files: []string{"notes.txt"}, refused: true},
		{name: "an earlier release's files and one of the user's: refused, all kept", files: append([]string{"notes.txt"}, earlier...), refused: true},
		{name: "a hidden file: refused, kept", files: []string{".keep"}, refused: true},
		{name: "a directory: refused, kept", files: []string{"src/"}, refused: true},
		{name: "a file as DIST: refused, kept", file: true, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dist := filepath.Join(t.TempDir(), "dist")
			switch {
			case tc.file:
				if err := os.WriteFile(dist, []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			case tc.files != nil:
				if err := os.Mkdir(dist, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.files {
				var err error
				if dir, ok := strings.CutSuffix(f, "/"); ok {
					err = os.Mkdir(filepath.Join(dist, dir), 0o755)
				} else {
					err = os.WriteFile(filepath.Join(dist, f), []byte("mine"), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", "hack/release.sh")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "MANIFESTS_ONLY=1", "KUBECTL=false", "HELM=false")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("hack/release.sh succeeded with a kubectl that fails:\n%s", out)
			}
			if got := strings.Contains(string(out), refusal); got != tc.refused {
				t.Errorf("refused = %v, want %v; output:\n%s", got, tc.refused, out)
			}
			for _, f := range tc.files {
				// Kept: the user's file as it was (a release may write
				// another of its name), or the directory.
				p := filepath.Join(dist, strings.TrimSuffix(f, "/"))
				b, err := os.ReadFile(p)
				kept := err == nil && string(b) == "mine"
				if strings.HasSuffix(f, "/") {
					_, err := os.Stat(p)
					kept = err == nil
				}
				if kept != tc.refused {
					t.Errorf("%s kept = %v, want %v", f, kept, tc.refused)
				}
			}
			if tc.file {
				if b, err := os.ReadFile(dist); err != nil || string(b) != "mine" {
					t.Errorf("the file DIST names was changed: %q, %v", b, err)
				}
			}
		})
	}
}
