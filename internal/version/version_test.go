package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Version: "v0.0.0-20261127085500-91f5a48abcde+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "91f5a48abcdef0123456789abcdef0123456789a"},
			{Key: "vcs.time", Value: "2026-11-27T08:55:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name                    string
		version, commit, date   string
		bi                      *debug.BuildInfo
		wantVersion, wantCommit string
		wantDate                string
	}{
		{"make stamps all three, over what the toolchain recorded", "v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-11-01T10:00:00Z", vcs,
			"v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-11-01T10:00:00Z"},
		{"a plain go build in a checkout takes the toolchain's", "", "", "", vcs,
			"v0.0.0-20261127085500-91f5a48abcde+dirty", "91f5a48abcdef0123456789abcdef0123456789a", "2026-11-27T08:55:00Z"},
		{"a build outside git says so", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"unknown (not built by make from a git checkout)", "unknown", "unknown"},
		{"no build information at all", "", "", "", nil,
			"unknown (not built by make from a git checkout)", "unknown", "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := get(tc.version, tc.commit, tc.date, tc.bi)
			if i.Version != tc.wantVersion || i.Commit != tc.wantCommit || i.BuildDate != tc.wantDate {
				t.Errorf("get() = %+v, want version %q, commit %q, date %q", i, tc.wantVersion, tc.wantCommit, tc.wantDate)
			}
			if !strings.HasPrefix(i.GoVersion, "go") || !strings.Contains(i.Platform, "/") {
				t.Errorf("get() = %+v, want the Go version and the platform", i)
			}
			for _, want := range []string{i.Version, i.Commit, i.BuildDate, i.GoVersion, i.Platform} {
				if !strings.Contains(i.String(), want) {
					t.Errorf("String() = %q, does not say %q", i.String(), want)
				}
			}
		})
	}
}
