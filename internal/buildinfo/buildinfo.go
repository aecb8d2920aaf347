// Package buildinfo says which build of lakewap is running: the module
// version the binary was built at (go install ...@v1.2.3), else the VCS
// revision Go stamped into it (a build from a checkout), else "dev". It
// feeds `lakewap version`, `--version` and the lakewap_build_info gauge.
//
// It imports only the standard library.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// version, when set with -ldflags "-X github.com/lakewap/lakewap/internal/buildinfo.version=v1.2.3",
// wins over what the Go toolchain stamped (a container build from a tree
// without .git has no VCS revision).
var version string

// Build is one binary's identity.
type Build struct {
	// Version is the module version, the short VCS revision (with "-dirty"
	// for a tree with uncommitted changes) or "dev".
	Version string `json:"version"`
	// Revision is the full VCS revision, "" when the build has none.
	Revision string `json:"revision,omitempty"`
	// Time is the revision's commit time, zero when unknown.
	Time time.Time `json:"time,omitzero"`
	// Modified says the tree had uncommitted changes.
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

// Read returns this binary's build. Since Go 1.24 a build in a git
// checkout has a pseudo-version (v0.0.0-<time>-<revision>, "+dirty" when
// modified) as its module version, and a build at a tag that tag.
func Read() Build {
	info, _ := debug.ReadBuildInfo()
	return fromInfo(info, version)
}

// fromInfo derives a Build from what the toolchain stamped; override is
// the -ldflags version.
func fromInfo(info *debug.BuildInfo, override string) Build {
	b := Build{GoVersion: runtime.Version()}
	if info == nil {
		b.Version = "dev"
		if override != "" {
			b.Version = override
		}
		return b
	}
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	switch mv := info.Main.Version; {
	case override != "":
		b.Version = override
	case mv != "" && mv != "(devel)":
		b.Version = mv
	case b.Revision != "":
		b.Version = b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			b.Version += "-dirty"
		}
	default:
		b.Version = "dev"
	}
	return b
}

// String is the line `lakewap version` prints.
func (b Build) String() string {
	s := "lakewap " + b.Version
	if short := b.Revision[:min(12, len(b.Revision))]; short != "" && !strings.Contains(b.Version, short) {
		s += " (" + short + ")"
	}
	if !b.Time.IsZero() {
		s += " " + b.Time.UTC().Format(time.RFC3339)
	}
	return s + " " + b.GoVersion
}
