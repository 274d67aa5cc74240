package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseRefusesAnotherBuildah: the image's bytes are buildah's (its
// version is even in each image's configuration), so hack/release.sh
// refuses a buildah other than the pinned one, saying which it found and
// which it wants, before it writes anything. Any user, no build: a buildah
// that says another version is first on PATH.
func TestReleaseRefusesAnotherBuildah(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fake := t.TempDir()
	script := "#!/bin/sh\necho 'buildah version 1.99.0 (image-spec 1.1.0, runtime-spec 1.2.0)'\n"
	if err := os.WriteFile(filepath.Join(fake, "buildah"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command("bash", "hack/release.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"),
		"VERSION="+version, "DIST="+dist, "LDFLAGS=-X main.unused=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("hack/release.sh built a release with buildah 1.99.0:\n%s", out)
	}
	if !strings.Contains(string(out), "buildah is 1.99.0, a release's image is built with ") {
		t.Errorf("the refusal does not name the buildah found and the one wanted:\n%s", out)
	}
	if _, err := os.Stat(dist); !os.IsNotExist(err) {
		t.Errorf("DIST was written before the refusal (%v)", err)
	}
}
