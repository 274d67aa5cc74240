package release

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fallbackRoots is the module whose CA roots the binary carries.
const fallbackRoots = "golang.org/x/crypto/x509roots/fallback"

// TestReleaseBinaryIsTheCommitsAlone: the binary of a release
// (hack/build-binary.sh, which hack/release.sh and make image call) is made
// of the commit and go.mod's toolchain alone. Built again in another clone
// of the commit (a .git directory, untracked files) on a machine whose Go
// is set up otherwise (no GOFLAGS=-buildvcs=false, another toolchain named
// by GOTOOLCHAIN, a go env file with build tags and GOAMD64=v3, a
// GOEXPERIMENT, a go.work with a godebug line), it is the same bytes; its
// build information names go.mod's toolchain, no version control state,
// and the CA roots of the pinned golang.org/x/crypto/x509roots/fallback.
// Any user; linux/amd64 only (the platforms share every flag).
func TestReleaseBinaryIsTheCommitsAlone(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	toolchain := goModToolchain(t, root)
	here := filepath.Join(t.TempDir(), "controller-manager")
	buildBinary(t, root, os.Environ(), here)

	clone := cloneCheckout(t, root)
	other := t.TempDir()
	goEnv := filepath.Join(other, "go.env")
	if err := os.WriteFile(goEnv, []byte("GOFLAGS=-tags=othermachine\nGOAMD64=v3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goWork := filepath.Join(other, "go.work")
	if err := os.WriteFile(goWork, []byte("go 1.26.0\n\nuse "+clone+"\n\ngodebug x509negativeserial=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	otherGo := "go1.26.7"
	if otherGo == toolchain {
		otherGo = "go1.26.6"
	}
	env := []string{"GOENV=" + goEnv, "GOWORK=" + goWork, "GOTOOLCHAIN=" + otherGo, "GOEXPERIMENT=nogreenteagc"}
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOFLAGS", "GOENV", "GOWORK", "GOTOOLCHAIN", "GOEXPERIMENT", "GOAMD64":
		default:
			env = append(env, kv)
		}
	}
	there := filepath.Join(other, "controller-manager")
	buildBinary(t, clone, env, there)

	a, b := read(t, filepath.Dir(here), "controller-manager"), read(t, other, "controller-manager")
	if !bytes.Equal(a, b) {
		t.Errorf("the binary differs between this checkout and a clone of the commit on a machine set up otherwise (sha256 %s and %s)\nhere:\n%s\nthere:\n%s",
			sum(a), sum(b), buildSettings(t, here), buildSettings(t, there))
	}

	bi, err := buildinfo.ReadFile(here)
	if err != nil {
		t.Fatal(err)
	}
	if bi.GoVersion != toolchain {
		t.Errorf("built by %s, want go.mod's toolchain %q", bi.GoVersion, toolchain)
	}
	if bi.Main.Version != "(devel)" {
		t.Errorf("the main module's version is %q, want (devel): the version is make's stamp, not the checkout's state", bi.Main.Version)
	}
	want := map[string]string{"-trimpath": "true", "CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": "amd64", "GOAMD64": "v1"}
	for _, s := range bi.Settings {
		if strings.HasPrefix(s.Key, "vcs") || s.Key == "-tags" || s.Key == "GOEXPERIMENT" || s.Key == "DefaultGODEBUG" {
			t.Errorf("the build information records %s=%s: it depends on the machine or the checkout", s.Key, s.Value)
		}
		if v, ok := want[s.Key]; ok {
			if s.Value != v {
				t.Errorf("built with %s=%s, want %s", s.Key, s.Value, v)
			}
			delete(want, s.Key)
		}
	}
	for k, v := range want {
		t.Errorf("the build information does not record %s=%s", k, v)
	}

	pinned := goModRequire(t, root, fallbackRoots)
	var linked string
	for _, d := range bi.Deps {
		if d.Path == fallbackRoots {
			linked = d.Version
		}
	}
	if pinned == "" || linked != pinned {
		t.Errorf("the binary links %s at %q, go.mod requires %q: the image's CA roots are not the pinned module's", fallbackRoots, linked, pinned)
	}
}

// buildBinary runs hack/build-binary.sh of the checkout dir for linux/amd64
// with env, stamped like a release.
func buildBinary(t *testing.T, dir string, env []string, out string) {
	t.Helper()
	cmd := exec.Command("bash", "hack/build-binary.sh", "linux/amd64", out)
	cmd.Dir = dir
	cmd.Env = append(env, "LDFLAGS=-X github.com/kube-sample/controller-manager/internal/version.version="+version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/build-binary.sh in %s: %v\n%s", dir, err, b)
	}
}

// cloneCheckout clones root's commit into a directory of its own and copies
// the working tree's files over it, so that it builds what root builds.
func cloneCheckout(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "controller-manager")
	run(t, root, "git", "clone", "--quiet", "--shared", root, dir)
	for _, f := range strings.Split(run(t, root, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00") {
		if f == "" {
			continue
		}
		src, dst := filepath.Join(root, f), filepath.Join(dir, f)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			os.Remove(dst)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goModToolchain is the Go toolchain go.mod's toolchain line names.
func goModToolchain(t *testing.T, root string) string {
	t.Helper()
	var mod struct{ Toolchain string }
	decode(t, []byte(run(t, root, "go", "mod", "edit", "-json")), &mod)
	if mod.Toolchain == "" {
		t.Error("go.mod has no toolchain line: nothing names the Go a release is built with")
	}
	return mod.Toolchain
}

// goModRequire is the version of module go.mod requires, "" if none.
func goModRequire(t *testing.T, root, module string) string {
	t.Helper()
	var mod struct {
		Require []struct{ Path, Version string }
	}
	decode(t, []byte(run(t, root, "go", "mod", "edit", "-json")), &mod)
	for _, r := range mod.Require {
		if r.Path == module {
			return r.Version
		}
	}
	return ""
}

// buildSettings is the build information `go version -m` prints, without
// the dependencies.
func buildSettings(t *testing.T, bin string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(run(t, filepath.Dir(bin), "go", "version", "-m", bin), "\n") {
		if !strings.HasPrefix(l, "\tdep") && !strings.HasPrefix(l, "\t=>") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
