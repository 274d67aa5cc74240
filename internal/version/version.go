// Package version is the build's identity: the version, commit and commit
// date that `make` stamps in with -ldflags -X (see the Makefile's LDFLAGS),
// or, for a plain `go build` in a git checkout, the commit and date the Go
// toolchain records itself.
//
// component-base/version is not used: its defaults claim a version and a
// build date for a binary that was given neither, and its --version prints
// the version alone.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags "-X github.com/kube-sample/controller-manager/internal/version.<name>=<value>".
var (
	version   string // git describe --tags --always --dirty
	commit    string // the full commit hash
	buildDate string // the commit's date, RFC 3339 in UTC, so that a rebuild is identical
)

// Unknown is what a field says when the build was not given it (a build
// outside a git checkout, or without make's -ldflags).
const Unknown = "unknown"

// Info is the build's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(version, commit, buildDate, bi)
}

func get(version, commit, buildDate string, bi *debug.BuildInfo) Info {
	i := Info{Version: version, Commit: commit, BuildDate: buildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = or(i.Commit, s.Value)
			case "vcs.time":
				i.BuildDate = or(i.BuildDate, s.Value)
			}
		}
		// The toolchain's own pseudo-version of a checkout (with +dirty
		// when it had changes); "(devel)" without version control.
		if v := bi.Main.Version; v != "(devel)" {
			i.Version = or(i.Version, v)
		}
	}
	i.Version = or(i.Version, Unknown+" (not built by make from a git checkout)")
	i.Commit = or(i.Commit, Unknown)
	i.BuildDate = or(i.BuildDate, Unknown)
	return i
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// String is the --version output.
func (i Info) String() string {
	return fmt.Sprintf("controller-manager %s\n  commit:     %s\n  build date: %s\n  go:         %s %s\n",
		i.Version, i.Commit, i.BuildDate, i.GoVersion, i.Platform)
}
