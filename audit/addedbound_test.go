package audit

import (
	"fmt"
	"strings"
	"testing"
)

// The sets merge_hazard's addedSuspects keeps, one per foundation and
// sealed commit, are bounded by their bytes: each holds up to
// maxAddedSuspects of the sealed commit's entries, whose path, checksum
// and address its writer chooses (up to the lakeFS client's 1,024, 256 and
// 2,048 bytes). Before, 1,024 sets of 100 such entries were kept, 338 MB;
// a set of more than maxAddedSetBytes is not kept (found again when asked
// again), so they hold at most 1,024 times it.
func TestAddedSuspectSetsAreBoundedByTheirBytes(t *testing.T) {
	e := &Engine{added: newBoundedMap[addedSet](1024)}
	path, sum, addr := strings.Repeat("p", 1000), strings.Repeat("c", 256), strings.Repeat("a", 2048)
	set := addedSet{objs: make([]Object, maxAddedSuspects)}
	for i := range set.objs {
		set.objs[i] = Object{Path: path, Checksum: sum, Address: addr, Size: 1}
	}
	small := addedSet{objs: []Object{{Path: "gold/x", Checksum: "c", Address: "s3://b/a", Size: 1}}}
	for i := range 1024 {
		e.keepAdded(fmt.Sprint("k", i), set)
	}
	e.keepAdded("small", small)
	held := 0
	for _, s := range e.added.m {
		for _, o := range s.objs {
			held += len(o.Path) + len(o.Checksum) + len(o.Address)
		}
	}
	if held > 64<<20 {
		t.Errorf("%d added sets kept, %d bytes of paths, checksums and addresses; want at most %d", len(e.added.m), held, 64<<20)
	}
	if _, ok := e.added.get("small"); !ok {
		t.Error("a small set was not kept")
	}
}
