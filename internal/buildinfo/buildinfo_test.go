package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromInfo(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		name     string
		info     *debug.BuildInfo
		override string
		want     string
		line     string
	}{
		{"go install at a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}}, "", "v1.4.0", "lakewap v1.4.0 go1.26.8"},
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, "", "0123456789ab",
			"lakewap 0123456789ab 2026-12-01T10:00:00Z go1.26.8"},
		{"checkout, Go 1.24+", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201100000-0123456789ab+dirty"}, Settings: vcs("true")}, "",
			"v0.0.0-20261201100000-0123456789ab+dirty", "lakewap v0.0.0-20261201100000-0123456789ab+dirty 2026-12-01T10:00:00Z go1.26.8"},
		{"modified checkout, no module version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")}, "",
			"0123456789ab-dirty", "lakewap 0123456789ab-dirty 2026-12-01T10:00:00Z go1.26.8"},
		{"no VCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "dev", "lakewap dev go1.26.8"},
		{"ldflags", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, "v2.0.0", "v2.0.0",
			"lakewap v2.0.0 (0123456789ab) 2026-12-01T10:00:00Z go1.26.8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fromInfo(tc.info, tc.override)
			if b.Version != tc.want || b.String() != tc.line {
				t.Errorf("version %q, line %q; want %q, %q", b.Version, b.String(), tc.want, tc.line)
			}
		})
	}
}

// A test binary is built from this checkout: Read sees what go test stamped.
func TestReadIsNotEmpty(t *testing.T) {
	b := Read()
	if b.Version == "" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Errorf("Read() = %+v", b)
	}
}
