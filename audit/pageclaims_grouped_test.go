package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestPageClaimsOfAColumnAmongManyAreCompared: columns whose pages cover
// the same rows are compared in one statement (columnIndexDisagreement).
// A pyarrow file of 40 columns in 8 row groups of one page each, whose
// 27th column's page header in row group 5 claims a min above the page's
// least value, is refused naming that column, row group and page; the
// honest file passes.
func TestPageClaimsOfAColumnAmongManyAreCompared(t *testing.T) {
	python, err := testPython()
	if err != nil || testing.Short() {
		t.Skipf("needs pyarrow (scripts/pyenv.sh): %v", err)
	}
	dir := t.TempDir()
	honestFile := filepath.Join(dir, "honest.parquet")
	script := `import sys, pyarrow as pa, pyarrow.parquet as pq
n = 8 * 50
pq.write_table(pa.table({f"c{j}": pa.array([i * 1000 + j for i in range(n)], pa.int64()) for j in range(40)}), sys.argv[1], row_group_size=50, use_dictionary=False)`
	if out, err := exec.Command(python, "-c", script, honestFile).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	honest, err := os.ReadFile(honestFile)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var off int64
	if err := db.QueryRow("SELECT data_page_offset FROM parquet_metadata(?) WHERE path_in_schema = 'c26' AND row_group_id = 5", honestFile).Scan(&off); err != nil {
		t.Fatal(err)
	}
	// Row group 5 of c26 holds 250026 .. 299026 by 1000: its header's min
	// (min_value and the legacy min) becomes 250027.
	least, claim := make([]byte, 9), make([]byte, 9)
	least[0], claim[0] = 8, 8
	binary.LittleEndian.PutUint64(least[1:], 250026)
	binary.LittleEndian.PutUint64(claim[1:], 250027)
	forged := bytes.Clone(honest)
	h := forged[off : off+80]
	patched := 0
	for i := bytes.Index(h, least); i >= 0; i = bytes.Index(h, least) {
		copy(h[i:], claim)
		patched++
	}
	if patched == 0 {
		t.Fatal("no min 250026 in the page header")
	}
	for _, c := range []struct {
		name  string
		b     []byte
		fails bool
	}{{"honest", honest, false}, {"forged", forged, true}} {
		src := oneFileBatch(t, c.b)
		e := newEngine(t, src, "")
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "c", Kind: KindNotNull, Table: "t", Column: "c0"}}}})
		if err != nil {
			t.Fatal(err)
		}
		got := rep.Checks[0]
		if !c.fails {
			if got.Status != schemas.StatusPass {
				t.Errorf("%s: %s %q, want pass", c.name, got.Status, got.Message)
			}
			continue
		}
		if got.Status != schemas.StatusError || !strings.Contains(got.Message, `row group 5, column "c26"`) || !strings.Contains(got.Message, "header of its data page") {
			t.Errorf("%s: %s %q, want refused naming row group 5, column c26 and its page header", c.name, got.Status, got.Message)
		}
	}
}
