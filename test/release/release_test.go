// Package release tests `make release`: what it writes, that the images
// are what each architecture runs, and that the same commit gives the same
// bytes twice, the second time as on another machine.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// version is a release version no real release uses.
const version = "v0.0.0-test.1"

func TestRelease(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("make release builds images with buildah's vfs storage, which needs root here (CI runs as root)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	first, second := t.TempDir(), t.TempDir()
	makeRelease(t, root, os.Environ(), "", first)
	// The second as on another machine: in a clone of the commit elsewhere
	// (a .git directory, tools built into its own bin/), under another
	// umask, without this machine's GOFLAGS=-buildvcs=false.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	makeRelease(t, cloneCheckout(t, root), env, "umask 002", second)

	files := []string{
		"BUILDINFO",
		"SHA256SUMS",
		"controller-manager-0.0.0-test.1.tgz",
		"controller-manager-" + version + "-linux-amd64.cdx.json",
		"controller-manager-" + version + "-linux-arm64.cdx.json",
		"controller-manager-" + version + ".oci.tar",
		"install.yaml",
	}
	entries, err := os.ReadDir(first)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, files) {
		t.Errorf("make release wrote %q, want %q", got, files)
	}

	t.Run("the same commit gives the same bytes", func(t *testing.T) {
		for _, f := range files {
			a, errA := os.ReadFile(filepath.Join(first, f))
			b, errB := os.ReadFile(filepath.Join(second, f))
			if errA != nil || errB != nil {
				t.Errorf("%s: %v, %v", f, errA, errB)
				continue
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs between make release here and in a clone of the same commit under another umask and GOFLAGS (sha256 %s and %s)%s",
					f, sum(a), sum(b), layoutDiff(t, f, a, b))
			}
		}
	})

	t.Run("SHA256SUMS covers every artifact", func(t *testing.T) {
		sums := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(read(t, first, "SHA256SUMS"))), "\n") {
			digest, name, ok := strings.Cut(line, "  ")
			if !ok {
				t.Fatalf("SHA256SUMS line %q is not sha256sum's", line)
			}
			sums[name] = digest
		}
		for _, f := range files {
			if f == "SHA256SUMS" {
				continue
			}
			if want, got := sums[f], sum(read(t, first, f)); want != got {
				t.Errorf("SHA256SUMS gives %s %q, the file's is %q", f, want, got)
			}
		}
	})

	commit := strings.TrimSpace(run(t, root, "git", "rev-parse", "HEAD"))
	toolchain := goModToolchain(t, root)
	t.Run("BUILDINFO names the commit, the Go toolchain and the image builder", func(t *testing.T) {
		buildah := strings.Fields(run(t, root, "buildah", "--version"))[2]
		info := "\n" + string(read(t, first, "BUILDINFO"))
		for _, want := range []string{"\ncommit: " + commit, "\ngo: " + toolchain + "\n", "\nbuildah: " + buildah + " ",
			"\ntar: ", "\nhelm: helm.sh/helm/v4 v", "\nkubectl: k8s.io/kubernetes v", "\ncyclonedx-gomod: github.com/CycloneDX/cyclonedx-gomod v"} {
			if !strings.Contains(info, want) {
				t.Errorf("BUILDINFO does not say %q:%s", strings.TrimSpace(want), info)
			}
		}
	})

	layout := untar(t, read(t, first, "controller-manager-"+version+".oci.tar"))
	t.Run("one image per architecture, each with its static binary", func(t *testing.T) {
		var index struct {
			Manifests []struct {
				MediaType   string            `json:"mediaType"`
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		decode(t, layout["index.json"], &index)
		if len(index.Manifests) != 1 || index.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
			t.Fatalf("index.json = %+v, want one OCI image index", index)
		}
		if name := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; name != "docker.io/library/controller-manager:"+version {
			t.Errorf("the image index is named %q, want docker.io/library/controller-manager:%s", name, version)
		}
		var images struct {
			Manifests []struct {
				Digest   string `json:"digest"`
				Platform struct {
					OS           string `json:"os"`
					Architecture string `json:"architecture"`
				} `json:"platform"`
			} `json:"manifests"`
		}
		decode(t, blob(t, layout, index.Manifests[0].Digest), &images)
		var platforms []string
		for _, m := range images.Manifests {
			platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		}
		if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
			t.Fatalf("the index holds images of %q, want linux/amd64 and linux/arm64 in that order", platforms)
		}
		machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
		for _, m := range images.Manifests {
			arch := m.Platform.Architecture
			if names := slices.Sorted(maps.Keys(imageFiles(t, layout, m.Digest))); !slices.Equal(names, []string{"controller-manager"}) {
				t.Errorf("%s: the image holds %q, want the binary alone (nothing of the build machine's)", arch, names)
			}
			bin := binaryOf(t, layout, m.Digest)
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("%s: /controller-manager is not an ELF file: %v", arch, err)
			}
			if f.Machine != machines[arch] {
				t.Errorf("%s: /controller-manager is for %v, want %v", arch, f.Machine, machines[arch])
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("%s: /controller-manager is dynamically linked (%v): the image has no libc", arch, p.Type)
				}
			}
			// -trimpath keeps -ldflags out of the build information: look
			// for the stamped strings themselves.
			for _, want := range []string{version, commit} {
				if !bytes.Contains(bin, []byte(want)) {
					t.Errorf("%s: /controller-manager does not hold %q: not stamped by make", arch, want)
				}
			}
			exe := filepath.Join(t.TempDir(), "controller-manager")
			if err := os.WriteFile(exe, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			// Another architecture's binary runs under Debian's
			// qemu-user-static, called directly (no binfmt needed).
			var out string
			if arch == runtime.GOARCH {
				out = run(t, root, exe, "--version")
			} else {
				out = run(t, root, emulator(t, root, arch), exe, "--version")
			}
			for _, want := range []string{"controller-manager " + version, "commit:     " + commit, "build date: 20",
				toolchain + " linux/" + arch} {
				if !strings.Contains(out, want) {
					t.Errorf("%s: --version printed %q, want it to say %q", arch, out, want)
				}
			}
		}
	})

	t.Run("skopeo reads the archive as it pushes it, both images and the same digest", func(t *testing.T) {
		skopeo := debianCommand(t, root, "skopeo", "skopeo")
		copied := filepath.Join(t.TempDir(), "layout")
		run(t, root, skopeo, "copy", "--all", "--quiet",
			"oci-archive:"+filepath.Join(first, "controller-manager-"+version+".oci.tar"), "oci:"+copied+":controller-manager:"+version)
		var want, got struct {
			Manifests []struct {
				Digest string `json:"digest"`
			} `json:"manifests"`
		}
		decode(t, layout["index.json"], &want)
		decode(t, read(t, copied, "index.json"), &got)
		if len(got.Manifests) != 1 || got.Manifests[0].Digest != want.Manifests[0].Digest {
			t.Errorf("skopeo copied the image index as %+v, want the archive's %+v", got, want)
		}
	})

	t.Run("the chart's version and appVersion are the release's", func(t *testing.T) {
		chart := untgz(t, read(t, first, "controller-manager-0.0.0-test.1.tgz"))
		meta := string(chart["controller-manager/Chart.yaml"])
		for _, want := range []string{"\nversion: 0.0.0-test.1\n", "\nappVersion: " + version + "\n"} {
			if !strings.Contains(meta, want) {
				t.Errorf("the packaged Chart.yaml does not say %q:\n%s", strings.TrimSpace(want), meta)
			}
		}
	})

	t.Run("install.yaml runs the release's image", func(t *testing.T) {
		if !strings.Contains(string(read(t, first, "install.yaml")), "image: controller-manager:"+version+"\n") {
			t.Error("install.yaml does not run controller-manager:" + version)
		}
	})

	t.Run("the SBOMs list every Go module of the binary", func(t *testing.T) {
		for _, arch := range []string{"amd64", "arm64"} {
			var bom struct {
				BOMFormat  string `json:"bomFormat"`
				Components []struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"components"`
			}
			decode(t, read(t, first, "controller-manager-"+version+"-linux-"+arch+".cdx.json"), &bom)
			listed := map[string]string{}
			for _, c := range bom.Components {
				listed[c.Name] = c.Version
			}
			bin := binaryOf(t, layout, manifestOf(t, layout, arch))
			bi, err := buildinfo.Read(bytes.NewReader(bin))
			if err != nil {
				t.Fatal(err)
			}
			if bom.BOMFormat != "CycloneDX" || len(bi.Deps) == 0 {
				t.Fatalf("%s: bomFormat %q, %d modules in the binary", arch, bom.BOMFormat, len(bi.Deps))
			}
			for _, d := range bi.Deps {
				if d.Replace != nil {
					d = d.Replace
				}
				if listed[d.Path] != d.Version {
					t.Errorf("%s: the SBOM gives %s %q, the binary has %q", arch, d.Path, listed[d.Path], d.Version)
				}
			}
		}
	})
}

// makeRelease runs make release VERSION=version DIST=dist in the checkout
// dir with env, after the shell command before (if any).
func makeRelease(t *testing.T, dir string, env []string, before, dist string) {
	t.Helper()
	script := `exec make release VERSION="$1" DIST="$2"`
	if before != "" {
		script = before + " && " + script
	}
	cmd := exec.Command("bash", "-c", script, "-", version, dist)
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s in %s: %v\n%s", script, dir, err, out)
	}
}

// layoutDiff names the files of two OCI archives that differ, and the
// entries of their layers, when name is the release's image archive.
func layoutDiff(t *testing.T, name string, a, b []byte) string {
	t.Helper()
	if !strings.HasSuffix(name, ".oci.tar") {
		return ""
	}
	la, lb := untar(t, a), untar(t, b)
	names := slices.Sorted(maps.Keys(la))
	for n := range lb {
		if _, ok := la[n]; !ok {
			names = append(names, n)
		}
	}
	var out []string
	for _, n := range names {
		if !bytes.Equal(la[n], lb[n]) {
			out = append(out, n+": "+layerEntries(la[n])+" | "+layerEntries(lb[n]))
		}
	}
	return "\n" + strings.Join(out, "\n")
}

// layerEntries lists a gzipped layer's entries with their modes, owners
// and times; "" for another blob.
func layerEntries(b []byte) string {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if err != nil {
			return strings.Join(out, ", ")
		}
		out = append(out, h.Name+" "+h.FileInfo().Mode().String()+" "+h.Uname+"/"+h.Gname+" "+h.ModTime.UTC().Format("2006-01-02"))
	}
}

// emulator is the qemu-user-static binary that runs arch's binaries here.
func emulator(t *testing.T, root, arch string) string {
	t.Helper()
	return debianCommand(t, root, map[string]string{"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static"}[arch], "qemu-user-static")
}

// debianCommand is the path of command, installed from Debian's package
// pkg when missing (hack/lib/install.sh, as hack/build-image.sh installs
// buildah).
func debianCommand(t *testing.T, root, command, pkg string) string {
	t.Helper()
	if path, err := exec.LookPath(command); err == nil {
		return path
	}
	log := filepath.Join(t.TempDir(), "apt.log")
	run(t, root, "bash", "-c", `source hack/lib/install.sh && install_packages release-test "$1" "$2"`, "-", log, pkg)
	path, err := exec.LookPath(command)
	if err != nil {
		t.Fatalf("%s installed, but %v", pkg, err)
	}
	return path
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %.200s: %v", b, err)
	}
}

// untar returns the regular files of a tar archive by name.
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading the archive: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "./")] = data
	}
}

func untgz(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return untar(t, data)
}

// blob is the content of digest in an OCI layout, checked against it.
func blob(t *testing.T, layout map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := layout["blobs/"+strings.Replace(digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("the layout has no blob %s", digest)
	}
	if got := "sha256:" + sum(b); got != digest {
		t.Fatalf("blob %s has digest %s", digest, got)
	}
	return b
}

// manifestOf is the digest of arch's image manifest in the layout's index.
func manifestOf(t *testing.T, layout map[string][]byte, arch string) string {
	t.Helper()
	var outer, inner struct {
		Manifests []struct {
			Digest   string `json:"digest"`
			Platform struct {
				Architecture string `json:"architecture"`
			} `json:"platform"`
		} `json:"manifests"`
	}
	decode(t, layout["index.json"], &outer)
	decode(t, blob(t, layout, outer.Manifests[0].Digest), &inner)
	for _, m := range inner.Manifests {
		if m.Platform.Architecture == arch {
			return m.Digest
		}
	}
	t.Fatalf("no image for %s", arch)
	return ""
}

// binaryOf is /controller-manager of the image whose manifest is digest.
func binaryOf(t *testing.T, layout map[string][]byte, digest string) []byte {
	t.Helper()
	bin, ok := imageFiles(t, layout, digest)["controller-manager"]
	if !ok {
		t.Fatalf("image %s has no /controller-manager", digest)
	}
	return bin
}

// imageFiles is the regular files of the image whose manifest is digest,
// by path.
func imageFiles(t *testing.T, layout map[string][]byte, digest string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	var manifest struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	decode(t, blob(t, layout, digest), &manifest)
	for _, l := range manifest.Layers {
		b := blob(t, layout, l.Digest)
		if strings.HasSuffix(l.MediaType, "+gzip") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		maps.Copy(files, untar(t, b))
	}
	return files
}
