package audit

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statsFiles counts the records in dir, in any generation.
func statsFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatsDirIsBounded: audit.stats_dir kept one record per file lakewap
// ever audited, for good: a writer's files (each new upload a new address)
// grew it without end, and records of files long gone from every table
// stayed. Records now go to the directory's current generation; a record
// used that is only in the previous one is copied into the current one;
// when the current one is full it becomes the previous one and the older
// one is deleted. So the directory holds at most two generations, and a
// record in use outlives any number of them.
func TestStatsDirIsBounded(t *testing.T) {
	defer func(n int) { statsPerGeneration = n }(statsPerGeneration)
	statsPerGeneration = 10
	dir := t.TempDir()
	s, err := NewStatsStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	hot := fmt.Sprintf("%064x", 1<<40)
	if err := s.put(hot, fileStats{Rows: 42}); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := s.put(fmt.Sprintf("%064x", i), fileStats{Rows: 1}); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			fresh, err := NewStatsStore(dir) // nothing in memory: read from disk
			if err != nil {
				t.Fatal(err)
			}
			if st, ok := fresh.get(hot); !ok || st.Rows != 42 {
				t.Fatalf("after %d records the one in use is gone: %+v %v", i+1, st, ok)
			}
			fresh.settle()
		}
	}
	s.settle()
	if n := statsFiles(t, dir); n > 2*statsPerGeneration+1 {
		t.Errorf("the directory holds %d records after 101 writes, want at most %d", n, 2*statsPerGeneration+1)
	}
}

// Records of the layout before generations (dir/xx/key.json) are read,
// and copied into the current generation when used; the old layout is
// deleted when its generation is.
func TestStatsDirOfTheLayoutBeforeGenerations(t *testing.T) {
	defer func(n int) { statsPerGeneration = n }(statsPerGeneration)
	statsPerGeneration = 10
	dir := t.TempDir()
	key := fmt.Sprintf("%064x", 7)
	old, err := NewStatsStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := old.put(key, fileStats{Rows: 7}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(old.path(key))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, key[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key[:2], key+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := NewStatsStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := s.get(key); !ok || st.Rows != 7 {
		t.Fatalf("a record of the old layout: %+v %v", st, ok)
	}
	for i := range 2*statsPerGeneration + 1 {
		if err := s.put(fmt.Sprintf("%064x", 100+i), fileStats{Rows: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s.settle()
	if _, err := os.Stat(filepath.Join(dir, key[:2])); !os.IsNotExist(err) {
		t.Errorf("the old layout's directory is still there (%v)", err)
	}
}
