package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The statistics kept in memory are bounded by their bytes (as stored),
// not only by their count: a writer's files choose the mins and maxes (up
// to 256 bytes each) of every column a check reads, so 65,536 records of
// the 16 KiB a record may take were 1 GiB. The oldest go first.
func TestStatsInMemoryAreBoundedByBytes(t *testing.T) {
	s, err := NewStatsStore("")
	if err != nil {
		t.Fatal(err)
	}
	st := fileStats{Rows: 1, Cols: map[string]colStats{}}
	for i := range 24 {
		st.Cols[fmt.Sprint("c", i)] = colStats{Type: "VARCHAR", NonNull: 1, Min: strings.Repeat("a", 250), Max: strings.Repeat("z", 250)}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	n := 2*maxStatsMemBytes/len(b) + 1
	for i := range n {
		if err := s.put(fmt.Sprintf("%064x", i), st); err != nil {
			t.Fatal(err)
		}
	}
	held := 0
	for _, r := range s.mem {
		b, _ := json.Marshal(r)
		held += len(b)
	}
	if held > maxStatsMemBytes {
		t.Errorf("%d records of %d bytes held in memory, %d bytes; want at most %d", len(s.mem), len(b), held, maxStatsMemBytes)
	}
	if _, ok := s.get(fmt.Sprintf("%064x", n-1)); !ok {
		t.Error("the newest record was not kept")
	}
}
