package audit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// callCountingSource counts Changed calls and the prefixes List is asked.
type callCountingSource struct {
	*dirSource
	mu      sync.Mutex
	changed int
	lists   []string
}

func (s *callCountingSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	s.mu.Lock()
	s.changed++
	s.mu.Unlock()
	objs, err := s.dirSource.Changed(ctx, repo, base, ref, prefix)
	for i := range objs {
		objs[i].Address = "" // a diff names no physical addresses
	}
	return objs, err
}

func (s *callCountingSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	s.mu.Lock()
	s.lists = append(s.lists, ref+":"+prefix)
	s.mu.Unlock()
	return s.dirSource.List(ctx, repo, ref, prefix)
}

// A batch-scope audit given the changes in its request (the runner's
// audit step diffed already) asks the source for no diff, and judges the
// same files as one that diffs itself. With a cache the changed files'
// addresses are listed once, under the folder that holds them all; the
// whole tables are listed once at each ref for relinked_objects.
func TestBatchScopeFromTheRequestsChanges(t *testing.T) {
	for _, cache := range []string{"", "cache"} {
		src := &callCountingSource{dirSource: fixture(t)}
		src.write(t, "b1", "gold/billing/batch=7/part-2.parquet", "SELECT NULL::BIGINT AS id, * EXCLUDE (id) FROM ("+billingRows(2001, 10)+")")
		dir := ""
		if cache != "" {
			dir = filepath.Join(t.TempDir(), cache)
		}
		e := newEngine(t, src, dir)
		check := Check{Kind: KindNotNull, Table: "billing", Columns: []string{"id"}, Scope: "batch"}
		run := func(changes *Changes) (string, int, []string) {
			src.mu.Lock()
			src.changed, src.lists = 0, nil
			src.mu.Unlock()
			rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b1", BaseRef: "main",
				BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: []Check{check}}, Changes: changes})
			if err != nil {
				t.Fatal(err)
			}
			c := only(t, rep)
			src.mu.Lock()
			defer src.mu.Unlock()
			return string(c.Status) + " " + c.Observed, src.changed, slices.Clone(src.lists)
		}
		info, err := os.Stat(filepath.Join(src.root, "b1", "gold", "billing", "batch=7", "part-2.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		diffed, diffs, _ := run(nil)
		given, givenDiffs, lists := run(&Changes{Objects: []Object{{Path: "gold/billing/batch=7/part-2.parquet", Size: info.Size()}}})
		// Diffing itself, it asks once per table: the unaudited-objects
		// rule also looks under customers, which no check reads.
		if diffs != len(tables) || givenDiffs != 0 || given != diffed || diffed == "pass " {
			t.Errorf("cache %q: diffing itself %q after %d diffs; given the changes %q after %d; want the same failing verdict, the second without a diff",
				cache, diffed, diffs, given, givenDiffs)
		}
		// The check relinked_objects lists each table whole at the ref and
		// at the base (relink.go: a relinked object is named by no diff).
		whole := []string{"b1:gold/billing/", "main:gold/billing/", "b1:gold/customers/", "main:gold/customers/"}
		want := whole
		if cache != "" {
			want = append([]string{"b1:gold/billing/batch=7/"}, whole...)
		}
		if !slices.Equal(lists, want) {
			t.Errorf("cache %q: listings %v; want %v", cache, lists, want)
		}
	}
}

// The batch-scope listing is confined to the folder that holds every
// changed file, never wider than the table's prefix.
func TestCommonFolder(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		paths  []string
		want   string
	}{
		{"gold/t/", []string{"gold/t/batch=1/part-0.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/part-0.parquet", "gold/t/batch=1/part-1.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/a/x.parquet", "gold/t/batch=1/b/y.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/x.parquet", "gold/t/batch=2/y.parquet"}, "gold/t/"},
		{"gold/t/", []string{"gold/t/x.parquet"}, "gold/t/"},
		{"gold/t/b", []string{"gold/t/batch=1/x.parquet", "gold/t/bx/y.parquet"}, "gold/t/b"},
		{"", []string{"a/x", "b/y"}, ""},
		{"", []string{"x"}, ""},
	} {
		if got := commonFolder(tc.prefix, tc.paths); got != tc.want {
			t.Errorf("commonFolder(%q, %v) = %q, want %q", tc.prefix, tc.paths, got, tc.want)
		}
	}
}
