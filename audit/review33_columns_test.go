package audit

import (
	"strings"
	"testing"
)

// TestReview33StructPathsOfAFileAreBounded: schemaColumns keeps each
// struct field's path below its column, its ancestors' names joined, for
// fieldCase. A footer of 9,994 elements (23 nested structs of 1,000-byte
// names over 9,970 one-letter fields: some 60 KB of names, read by the Go
// footer reader) made 219,822,541 bytes of paths, per file, held in the
// memo under a size that did not count them. The paths of a file are
// now bounded (maxNestedPathBytes); past it the column is marked, and a
// Delta schema naming a field under it refuses the file, not comparing.
func TestReview33StructPathsOfAFileAreBounded(t *testing.T) {
	nodes := []schemaNode{{name: "root", children: 1}}
	for range 23 {
		nodes = append(nodes, schemaNode{name: strings.Repeat("n", 1000), children: 1})
	}
	nodes[len(nodes)-1].children = 9970
	for range 9970 {
		nodes = append(nodes, schemaNode{name: "x"})
	}
	cols := schemaColumns(nodes)
	total := 0
	for _, c := range cols {
		for _, p := range c.nested {
			total += len(p)
		}
	}
	if total > maxNestedPathBytes+footerMaxName*footerMaxDepth {
		t.Fatalf("%d bytes of paths from %d elements; want at most %d", total, len(nodes), maxNestedPathBytes)
	}
	path := strings.Repeat(strings.Repeat("n", 1000)+"\x00", 22) + "X"
	col, got, want := fieldCase(cols, map[string][]string{strings.Repeat("n", 1000): {path}})
	if col == "" {
		t.Fatalf("a Delta schema naming a field under the column is compared with paths left out; want it refused")
	}
	t.Logf("%d bytes of paths; refused: field %q of %q, %q", total, got[:min(len(got), 80)], col[:10], want[len(want)-10:])
}
