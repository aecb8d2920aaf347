package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The pages under docs/reference are what the code gives: a config key,
// check kind, field, event, header or flag added or changed without
// regenerating them fails here.
func TestReferenceIsCurrent(t *testing.T) {
	pages, err := referencePages("../..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range pages {
		path := filepath.Join("..", "..", "docs", "reference", name)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go run ./cmd/lakewap reference)", path, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go run ./cmd/lakewap reference (first difference at line %d)", path, firstDiffLine(got, want))
		}
	}
}

func firstDiffLine(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// Every command of the main usage has its section in cli.md.
func TestReferenceCLIHasEveryCommand(t *testing.T) {
	page := string(cliPage())
	for _, name := range []string{"run", "demo", "validate", "audit", "emit", "tail", "retry", "revert", "version"} {
		if !strings.Contains(page, "\n## lakewap "+name+"\n") {
			t.Errorf("cli.md has no section for %s", name)
		}
	}
}
