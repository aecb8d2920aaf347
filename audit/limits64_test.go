package audit

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A JSON lines file is the writer's: one line of an array nested 100,000
// deep (200 KB, within DuckDB's 16 MiB a line) made DuckDB overflow its
// stack while it bound the table's read, and the whole process, every
// audit and run in it, died with a segmentation fault (then again at each
// of the batch's audit attempts). pandas' read_json refuses more than 1,024
// levels, Spark's Jackson more than 1,000: the file is refused, naming it,
// its line and the bound, before DuckDB reads it. A file within the bound
// is read as before.
func TestLimits64DeeplyNestedJSONLineIsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		depth   int
		refused bool
	}{{"within", 999, false}, {"past", 100000, true}} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			deep := `{"id": 2, "a": ` + strings.Repeat("[", c.depth) + strings.Repeat("]", c.depth) + "}\n"
			src.writeRaw(t, "main", "raw/logs/a.jsonl", "{\"id\": 1, \"a\": [\"x\"]}\n"+deep)
			e := newEngine(t, src, "")
			rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
				Tables: []Table{{Name: "logs", Path: "raw/logs/", Format: FormatJSONL}},
				Checks: []Check{{Kind: KindRowCount, Table: "logs", Min: f64(1)}}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			t.Logf("%s %s: %.300s", res.Status, res.Observed, res.Message)
			if !c.refused {
				if res.Status != schemas.StatusPass {
					t.Errorf("a file %d deep: %s %q", c.depth, res.Status, res.Message)
				}
				return
			}
			if res.Status != schemas.StatusError || !strings.Contains(res.Message, "raw/logs/a.jsonl") ||
				!strings.Contains(res.Message, "line 2") || !strings.Contains(res.Message, "1000") {
				t.Errorf("a file 100,000 deep: %s %q, want an error naming the file, its line and the bound", res.Status, res.Message)
			}
		})
	}
}

// deepParquet is a Parquet file of no rows whose schema nests depth
// optional groups, each of one child, above one INT32 leaf: its footer
// written by hand in Thrift's compact protocol (8 bytes a group).
func deepParquet(depth int) []byte {
	i32 := func(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64((v<<1)^(v>>63))) }
	f := i32([]byte{0x15}, 1)                                        // 1: version
	f = binary.AppendUvarint(append(f, 0x19, 0xFC), uint64(depth+2)) // 2: schema, a list of structs
	f = append(append(f, 0x48, 6), "schema"...)                      // root: 4: name
	f = append(i32(append(f, 0x15), 1), 0)                           // 5: num_children
	for range depth {
		f = i32(append(f, 0x35), 1)            // 3: repetition_type OPTIONAL
		f = append(f, 0x18, 1, 'a')            // 4: name
		f = append(i32(append(f, 0x15), 1), 0) // 5: num_children
	}
	f = i32(append(f, 0x15), 1)              // leaf: 1: type INT32
	f = i32(append(f, 0x25), 1)              // 3: repetition_type
	f = append(f, 0x18, 1, 'x', 0)           // 4: name
	f = append(f, 0x16, 0x00, 0x19, 0x0C, 0) // 3: num_rows 0, 4: row_groups [], stop
	file := append([]byte("PAR1"), f...)
	file = binary.LittleEndian.AppendUint32(file, uint32(len(f)))
	return append(file, "PAR1"...)
}

// A Parquet file's footer is the writer's too: a schema of 100,000 nested
// groups (a footer of 800 KB, within the 4 MiB the footer reader takes)
// is past the Go reader's 24 levels, which handed the file to DuckDB's
// parquet_schema, which overflowed its stack, and the process died with a
// segmentation fault. Past maxDuckDBSchemaDepth the file is refused before
// DuckDB reads it, naming it and the bound; as before, a file nested past
// what the Go reader takes is refused (the claims' check, after DuckDB
// listed its schema), and one within it is read.
func TestLimits64DeeplyNestedParquetSchemaIsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		depth   int
		refused bool
	}{{"within", 20, false}, {"past_go", 100, true}, {"past_duckdb", 2000, true}, {"past", 100000, true}} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.writeRaw(t, "main", "raw/t/a.parquet", string(deepParquet(c.depth)))
			e := newEngine(t, src, "")
			rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
				Tables: []Table{{Name: "t", Path: "raw/t/"}},
				Checks: []Check{{Kind: KindRowCount, Table: "t", Min: f64(0)}}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			t.Logf("%s %s: %.300s", res.Status, res.Observed, res.Message)
			if !c.refused {
				if res.Status != schemas.StatusPass {
					t.Errorf("a schema %d deep: %s %q", c.depth, res.Status, res.Message)
				}
				return
			}
			if res.Status != schemas.StatusError || !strings.Contains(res.Message, "raw/t/a.parquet") || !strings.Contains(res.Message, "nest") {
				t.Errorf("a schema %d deep: %s %q, want an error naming the file and its nesting", c.depth, res.Status, res.Message)
			}
		})
	}
}

// The statistics kept in memory are counted as stored (their JSON), and
// held decoded: a writer's files choose their columns, so a record's
// schema of many short names (["c1","INTEGER"] is 16 bytes of JSON, 48
// held) holds about three times what it is counted; and the schemas
// interned (1,024, never let go) were counted nowhere: 247 MB held for
// 64 MiB. Records of distinct schemas filling the budget must hold at most
// about the budget (records', and interned schemas' 8 MiB).
func TestLimits64StatsInMemoryHoldWithinTheirBudget(t *testing.T) {
	s, err := NewStatsStore("")
	if err != nil {
		t.Fatal(err)
	}
	record := func(i int) fileStats {
		st := fileStats{Rows: 1}
		for c := range 640 {
			st.Schema = append(st.Schema, [2]string{fmt.Sprintf("c%x_%x", i, c), "INTEGER"})
		}
		return st
	}
	base := heapAfterGC()
	n := 0
	for ; n < 4*maxStatsMemBytes/(16<<10); n++ {
		if err := s.put(fmt.Sprintf("k%08d", n), record(n)); err != nil {
			t.Fatal(err)
		}
	}
	held := heapAfterGC() - base
	s.mu.Lock()
	counted, kept := s.memBytes, len(s.mem)
	s.mu.Unlock()
	runtime.KeepAlive(s)
	budget := maxStatsMemBytes + maxInternedBytes
	t.Logf("%d records put, %d kept: %.1f MB counted, %.1f MB held, budget %.1f MB (records and interned schemas)", n, kept, float64(counted)/1e6, float64(held)/1e6, float64(budget)/1e6)
	if float64(held) > 1.1*float64(budget) {
		t.Errorf("statistics in memory held %d bytes for a budget of %d (%d counted)", held, budget, counted)
	}
}

func heapAfterGC() int {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int(m.HeapAlloc)
}

// A custom query may call DuckDB's JSON functions over a column's text,
// which the writer chooses: json_structure recurses once per level of the
// text, and over 100,000 nested brackets it overflowed DuckDB's stack and
// killed the process. It is not among the functions a custom query may
// call; the JSON functions that walk their input without recursing are.
func TestLimits64JSONStructureOfAWritersTextIsNotCalled(t *testing.T) {
	src := newDirSource(t)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	src.writeRaw(t, "main", "raw/t/a.csv", "id,payload\n1,[1]\n2,"+deep+"\n")
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
		Tables: []Table{{Name: "t", Path: "raw/t/", Format: FormatCSV}},
		Checks: []Check{
			{Name: "structure", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE json_structure(payload) IS NULL"},
			{Name: "valid", Kind: KindSQL, Table: "t", SQL: "SELECT * FROM t WHERE NOT json_valid(payload)"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		t.Logf("%s: %s %s %.200s", c.Name, c.Status, c.Observed, c.Message)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusError || !strings.Contains(c.Message, "json_structure is not allowed") {
		t.Errorf("json_structure over a writer's text: %s %q, want it refused by name", c.Status, c.Message)
	}
	if c := rep.Checks[1]; c.Status != schemas.StatusPass {
		t.Errorf("json_valid over the same text: %s %q", c.Status, c.Message)
	}
}
