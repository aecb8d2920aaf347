package audit

import (
	"fmt"
	"strings"
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
	for i := range maxDerivationRecords + 10 {
		e.RecordMerge("lake", id(100+i), id(1))
	}
	if n := len(d.merges.m); n > maxDerivationRecords {
		t.Errorf("%d merges kept, over %d", n, maxDerivationRecords)
	}
}
