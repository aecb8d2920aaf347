package blockstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/audit"
)

// The local blockstore answers the size of the file at an address under
// its root, and refuses anything else with an error naming why.
func TestLocalStoredSize(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "lake", "data", "g1", "a")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, make([]byte, 83), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "b")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Local{Root: root}
	for _, tc := range []struct {
		address  string
		size     int64
		notFound bool
		err      string
	}{
		{address: "local://" + file, size: 83},
		{address: "local://" + filepath.Join(root, "lake", "data", "g1", "missing"), notFound: true},
		{address: "local://" + outside, err: "is not under the blockstore's path"},
		{address: "local://" + root + "/lake/../../" + filepath.Base(outside), err: "is not under the blockstore's path"},
		{address: "local://" + filepath.Join(root, "lake", "data"), err: "is not a regular file"},
		{address: "local://lake/data/g1/a", err: "is not an address of the local blockstore"},
		{address: "s3://bucket/lake/data/g1/a", err: "is not an address of the local blockstore"},
	} {
		got, err := l.StoredSize(context.Background(), tc.address)
		switch {
		case tc.notFound && !errors.Is(err, audit.ErrNotStored):
			t.Errorf("%s: %d, %v; want not stored", tc.address, got, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %d, %v; want an error saying %q", tc.address, got, err, tc.err)
		case !tc.notFound && tc.err == "" && (err != nil || got != tc.size):
			t.Errorf("%s: %d, %v; want %d", tc.address, got, err, tc.size)
		}
	}
}
