package runstore

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Keys that someone else wrote to the changelog, holding no record lakewap
// sealed (unsealed records, forged seals, records under a mark's key that
// are no mark), are deleted by the load that sets them aside, so that
// compaction removes them: before, they stayed in the compacted topic for
// good, and every later load read, logged and counted them again.
// lakewap's own records stay, those the config now refuses included.
func TestJunkKeysAreDeletedFromTheChangelog(t *testing.T) {
	inner, s, ctx := loadedStore(t)
	var err error
	key, good := record(t, nil)
	must(t, s.Put(ctx, 0, key, good))
	gk, gone := record(t, func(r *pipeline.Run) {
		r.Dataset = "gone"
		r.BatchID = "b2"
		r.Branch = schemas.BranchName("gone", "b2")
	})
	must(t, s.Put(ctx, 0, gk, gone))
	forged := bytes.Replace(inner.latest(0)[key], []byte(`"publishing"`), []byte(`"published"`), 1)
	const junk = 300
	for i := range junk {
		_, v := record(t, func(r *pipeline.Run) { r.BatchID = fmt.Sprint("j", i) })
		must(t, inner.Put(ctx, 0, fmt.Sprint("billing/j", i), v))                     // unsealed
		must(t, inner.Put(ctx, 0, fmt.Sprint("billing/f", i), forged))                // a bad seal
		must(t, inner.Put(ctx, 0, fmt.Sprint("#junk/", i), []byte(`{"wap_mark":1}`))) // under a mark's key
	}
	got, err := s.Load(ctx, 0)
	must(t, err)
	if len(got) != 1 || !bytes.Equal(got[key], good) {
		t.Fatalf("restored %v, want only %s", keys(got), key)
	}
	inner.compact(0)
	left := inner.latest(0)
	if _, ok := left[gk]; !ok {
		t.Errorf("lakewap's record of a dataset no longer configured was deleted; it is kept for inspection")
	}
	n := 0
	for k := range left {
		if k != key && k != gk && !IsMark(k) || bytes.HasPrefix([]byte(k), []byte("#junk/")) {
			n++
		}
	}
	if n != 0 {
		t.Errorf("after the load and compaction the changelog holds %d junk keys of %d, want none", n, 3*junk)
	}
	before := setAside(t, s, ReasonUnsealed) + setAside(t, s, ReasonBadSeal) + setAside(t, s, ReasonUnreadable)
	got, err = s.Load(ctx, 0)
	must(t, err)
	after := setAside(t, s, ReasonUnsealed) + setAside(t, s, ReasonBadSeal) + setAside(t, s, ReasonUnreadable)
	if len(got) != 1 || after != before {
		t.Errorf("the next load restored %v and set aside %v more junk records, want %s and none", keys(got), after-before, key)
	}
}

// A load remembers the keys it sets aside (to delete them) within a byte
// budget: before, it held every key the partition holds while it read it,
// so a writer of the topic who wrote keys of 1 MiB until the heap was
// spent made every load fail before it could delete any, at every
// restart. Past the budget, a load deletes what it remembered, and the
// next load the rest; lakewap's own runs are restored throughout.
func TestJunkKeysBeyondTheBudgetAreDeletedOverLoads(t *testing.T) {
	inner, s, ctx := loadedStore(t)
	var err error
	key, good := record(t, nil)
	must(t, s.Put(ctx, 0, key, good))
	long := maxJunkKeyBytes / 8
	for i := range 12 {
		must(t, inner.Put(ctx, 0, fmt.Sprintf("%d%s", i, bytes.Repeat([]byte("j"), long)), []byte(`{}`)))
	}
	r, err := s.restore(ctx, 0, func(string, []byte, string, string) {})
	must(t, err)
	held := 0
	for k := range r.latest {
		held += len(k)
	}
	for k := range r.marks {
		held += len(k)
	}
	if held > maxJunkKeyBytes {
		t.Errorf("the load held %d bytes of keys set aside, want at most %d", held, maxJunkKeyBytes)
	}
	for load := 1; ; load++ {
		got, err := s.Load(ctx, 0)
		must(t, err)
		if len(got) != 1 || !bytes.Equal(got[key], good) {
			t.Fatalf("load %d restored %v, want %s", load, keys(got), key)
		}
		inner.compact(0)
		left := 0
		for k := range inner.latest(0) {
			if len(k) > long {
				left++
			}
		}
		if left == 0 {
			break
		}
		if load == 3 {
			t.Fatalf("after %d loads %d junk keys are left", load, left)
		}
	}
}

// loadedStore is a Store over a fresh logStore, its records sealed with a
// test key, with partition 0 loaded.
func loadedStore(t *testing.T) (logStore, *Store, context.Context) {
	t.Helper()
	inner := logStore{}
	s, err := New(Config{Inner: inner, Key: bytes.Repeat([]byte("k"), 32), Datasets: specs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = s.Load(ctx, 0)
	must(t, err)
	return inner, s, ctx
}
