package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildVersioned builds the binary with extra go build flags and returns
// what `lakewap version` and `lakewap --version` print.
func buildVersioned(t *testing.T, flags ...string) (version, dashVersion string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lakewap")
	args := append(append([]string{"build"}, flags...), "-o", bin, ".")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var lines []string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("lakewap %s: %v", arg, err)
		}
		lines = append(lines, strings.TrimSpace(string(out)))
	}
	return lines[0], lines[1]
}

// The binary says which build it is: built from a git checkout, the
// revision checked out (with "+dirty" for a tree with changes), never the
// "dev" of a build without one; `version` and `--version` agree. It is
// built with -buildvcs=true: a GOFLAGS of -buildvcs=false (as on the
// project's machines) stamps nothing.
func TestVersionIsTheVCSRevision(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the build has no VCS revision to report", err)
	}
	root, head, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		t.Skipf("%s/.git is not a directory (a git worktree): Go stamps no VCS revision into builds there", root)
	}
	v, dv := buildVersioned(t, "-buildvcs=true")
	// Go derives a pseudo-version from the revision (v0.0.0-<time>-<rev>),
	// or the tag's version at a tag.
	if !strings.HasPrefix(v, "lakewap v") || !strings.Contains(v, head[:12]) || v != dv {
		t.Errorf("lakewap version %q, --version %q; want both to be a module version naming revision %s", v, dv, head[:12])
	}
}

// A release build names its version with -ldflags, which wins over the
// revision (a container build from a tree without .git has none).
func TestVersionFromLdflags(t *testing.T) {
	v, dv := buildVersioned(t, "-ldflags=-X github.com/lakewap/lakewap/internal/buildinfo.version=v9.8.7")
	if !strings.HasPrefix(v, "lakewap v9.8.7 ") || v != dv {
		t.Errorf("lakewap version %q, --version %q; want both to start with \"lakewap v9.8.7 \"", v, dv)
	}
}

// --version, -version and version print one text; version -json carries
// the same version.
func TestVersionSpellingsAgree(t *testing.T) {
	_, want, _ := runCLI("version")
	for _, args := range [][]string{{"--version"}, {"-version"}} {
		if code, out, errOut := runCLI(args...); code != 0 || out != want {
			t.Errorf("lakewap %v: exit %d, %q (%s); want %q", args, code, out, errOut, want)
		}
	}
	_, out, _ := runCLI("version", "-json")
	var b struct{ Version string }
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Version == "" || !strings.HasPrefix(want, "lakewap "+b.Version+" ") {
		t.Errorf("version -json %q (%v); want the version of %q", out, err, want)
	}
}

// Single-dash long flags become cobra's double-dash ones; short flags,
// values and what follows "--" are left alone.
func TestNormalizeArgs(t *testing.T) {
	got := strings.Join(normalizeArgs([]string{"tail", "-config", "c.yaml", "-follow=false", "-v", "--max", "2", "x", "--", "-keep"}), " ")
	if want := "tail --config c.yaml --follow=false -v --max 2 x -- -keep"; got != want {
		t.Errorf("normalizeArgs: %q, want %q", got, want)
	}
}
