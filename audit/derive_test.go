package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A derived listing is the head's with each difference removed or taken
// from the sealed commit's listing, in path order; a difference naming an
// entry neither listing holds declines the derivation.
func TestApplyDifferences(t *testing.T) {
	o := func(p, addr string) Object { return Object{Path: p, Address: addr, Checksum: "c" + addr, Size: 1} }
	head := []Object{o("t/a", "h1"), o("t/b", "h2"), o("t/c", "h3")}
	sealed := []Object{o("t/a", "h1"), o("t/b", "s2"), o("t/d", "s4")}
	for _, tt := range []struct {
		name  string
		diffs []Difference
		want  string
		ok    bool
	}{
		{"none", nil, "t/a@h1 t/b@h2 t/c@h3", true},
		{"changed, added, removed", []Difference{{Path: "t/b"}, {Path: "t/d"}, {Path: "t/c", Removed: true}}, "t/a@h1 t/b@s2 t/d@s4", true},
		{"added where the sealed commit has nothing", []Difference{{Path: "t/e"}}, "", false},
		{"removed where the head has nothing", []Difference{{Path: "t/d", Removed: true}}, "", false},
	} {
		got, ok := applyDifferences(head, sealed, tt.diffs)
		var s []string
		for _, g := range got {
			s = append(s, g.Path+"@"+g.Address)
		}
		if ok != tt.ok || strings.Join(s, " ") != tt.want {
			t.Errorf("%s: %v %v; want %q %v", tt.name, s, ok, tt.want, tt.ok)
		}
	}
}

// Only commit ids are recorded, within the record budget; the cleared
// comparisons cover the prefixes under their table paths only.
func TestDerivationRecords(t *testing.T) {
	e := &Engine{derived: newDerivations()}
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	e.RecordMerge("lake", "main", id(1))
	e.RecordMerge("lake", id(2), "branch")
	e.RecordMerge(strings.Repeat("r", maxDerivationRecordBytes), id(3), id(4))
	e.RecordMerge("lake", id(5), id(6))
	for _, k := range []string{"lake\x00main", "lake\x00" + id(2), strings.Repeat("r", maxDerivationRecordBytes) + "\x00" + id(3)} {
		if _, ok := e.derived.merges.get(k); ok {
			t.Errorf("recorded %q", k)
		}
	}
	if s, ok := e.derived.merges.get("lake\x00" + id(5)); !ok || s != id(6) {
		t.Errorf("own merge not recorded: %q %v", s, ok)
	}
	d := e.derived
	d.clear("lake", id(6), id(7), []string{"gold/t/"})
	d.clear("lake", id(6), id(7), []string{"gold/u/"})
	d.clear("lake", "branch", id(7), []string{"gold/v/"})
	for prefix, want := range map[string]bool{"gold/t/": true, "gold/t/batch=1/": true, "gold/u/": true, "gold/": false, "gold/t2/": false, "gold/v/": false} {
		if got := d.covers("lake", id(6), id(7), prefix); got != want {
			t.Errorf("covers %s = %v, want %v", prefix, got, want)
		}
	}
	if d.covers("lake", id(7), id(6), "gold/t/") {
		t.Error("a comparison covers the other way round")
	}
	// The head a sealed commit was cleared against last is the one a
	// derivation ahead takes its flights for, also when that comparison
	// was recorded before with the same paths.
	d.clear("lake", id(6), id(8), []string{"gold/t/"})
	d.clear("lake", id(6), id(7), []string{"gold/t/"})
	if h, _ := d.against.get("lake\x00" + id(6)); h != id(7) {
		t.Errorf("cleared against ...%s last, recorded %q", id(7)[60:], h)
	}
	for i := range maxDerivationRecords + 10 {
		e.RecordMerge("lake", id(100+i), id(1))
	}
	if n := len(d.merges.m); n > maxDerivationRecords {
		t.Errorf("%d merges kept, over %d", n, maxDerivationRecords)
	}
}

// A cleared record within budget stays so when later calls add paths: the
// budget measures the merged record, and a call that would take it over
// leaves the record as it was. (Before, each call measured only its own
// paths, and eight calls of 500-byte paths kept a record of over 4 KiB.)
func TestClearedRecordStaysWithinItsBudget(t *testing.T) {
	d := newDerivations()
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	path := func(i int) string { return fmt.Sprintf("gold/%03d/", i) + strings.Repeat("p", 490) + "/" }
	for i := range 8 {
		d.clear("lake", id(1), id(2), []string{path(i)})
	}
	paths, _ := d.cleared.get("lake\x00" + id(1) + "\x00" + id(2))
	n := len("lake") + 2*64
	for _, p := range paths {
		n += len(p)
	}
	if n > maxDerivationRecordBytes {
		t.Fatalf("a cleared record of %d bytes (%d paths) kept, over %d", n, len(paths), maxDerivationRecordBytes)
	}
	if !d.covers("lake", id(1), id(2), path(0)) {
		t.Error("the first path, within budget, is no longer covered")
	}
	if d.covers("lake", id(1), id(2), path(7)) {
		t.Error("a path over the budget is covered")
	}
}

// Concurrent clears of the same comparison keep every path: the record is
// read and written under one lock. (Before, two clears could both read the
// old record and the second's write drop the first's path.)
func TestConcurrentClearsKeepEveryPath(t *testing.T) {
	d := newDerivations()
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	const keys, each = 500, 4
	var wg sync.WaitGroup
	for k := range keys {
		for p := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.clear("lake", id(k), id(keys+k), []string{fmt.Sprintf("gold/t%d/", p)})
			}()
		}
	}
	wg.Wait()
	lost := 0
	for k := range keys {
		for p := range each {
			if !d.covers("lake", id(k), id(keys+k), fmt.Sprintf("gold/t%d/", p)) {
				lost++
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d cleared paths lost by concurrent clears", lost, keys*each)
	}
}

// Engine.Listing lists commits only, within the listing budget: a branch's
// listing changes, so it is refused and not kept as if it were a commit's.
// (Before, it went to listCommit directly: a branch's listing was kept, and
// a listing over audit.max_list_objects was returned.)
func TestListingTakesCommitIDsWithinTheBudget(t *testing.T) {
	id := fmt.Sprintf("%064x", 1)
	objs := []Object{{Path: "gold/t/a", Address: "a", Checksum: "a", Size: 1}, {Path: "gold/t/b", Address: "b", Checksum: "b", Size: 1}}
	e, err := New(Options{Source: mapSource{"main": objs, id: objs}, WorkDir: t.TempDir(), MaxListObjects: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if got, err := e.Listing(ctx, "lake", "main", "gold/t/"); err == nil || !strings.Contains(err.Error(), "commit id") {
		t.Errorf("a branch's listing: %v %v, want an error naming the commit id", got, err)
	}
	if _, ok := e.listings.get("lake", "main", "gold/t/"); ok {
		t.Error("a branch's listing is kept as a commit's")
	}
	if got, err := e.Listing(ctx, "lake", id, "gold/t/"); !errors.Is(err, ErrOverBudget) {
		t.Errorf("a listing of 2 objects over a budget of 1: %v %v, want ErrOverBudget", got, err)
	}
}
