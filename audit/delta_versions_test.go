package audit

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A batch can commit several Delta versions, and after the merge they are
// all on main: delta-rs's time travel (DeltaTable(uri, version=v)),
// Spark's VERSION AS OF and CDF readers read each of them. A data file one
// of the batch's versions adds and a later one removes is read by them,
// so the row checks read it too (deltaInterim).

// deltaVersions writes, with delta-rs, a clean table on main (ids 1..3,
// version 0) and a batch on b1 of two versions: the first appends rows
// with a NULL id and a negative amount, the second takes them away
// (how: "overwrite" writes the table anew with ids 4 and 5, "delete"
// deletes the NULL ids, which rewrites the file without them). "read"
// prints, as JSON, the rows and NULL ids delta-rs reads at a version.
const deltaVersions = `
import sys, os, json
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
def rows(ids, amounts):
    return pa.table({"id": pa.array(ids, pa.int64()), "amount": pa.array(amounts, pa.float64()), "region": pa.array(["a"] * len(ids))})
if mode == "base":
    write_deltalake(out, rows([1, 2, 3], [1.0, 2.0, 3.0]))
elif mode == "read":
    t = DeltaTable(out, version=int(sys.argv[3])).to_pyarrow_table()
    print(json.dumps({"rows": t.num_rows, "null_ids": t.column("id").null_count,
        "negative": sum(1 for a in t.column("amount").to_pylist() if a is not None and a < 0)}))
else:
    write_deltalake(out, rows([None, 7], [-5.0, 7.0]), mode="append")
    if mode == "overwrite":
        write_deltalake(out, rows([4, 5], [4.0, 5.0]), mode="overwrite")
    else:
        DeltaTable(out).delete("id IS NULL")
    print(json.dumps({"version": DeltaTable(out).version()}))
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// deltaVersionsBatch builds the table (how: the batch's second version)
// and returns the source; skipped without delta-rs.
func deltaVersionsBatch(t *testing.T, how string) (*dirSource, string) {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	src := newDirSource(t)
	py := func(dir string, args ...string) string {
		out, err := exec.Command(python, append([]string{"-c", deltaVersions, dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("deltalake: %v\n%s", err, out)
		}
		return string(out)
	}
	py(filepath.Join(src.root, "main", "gold", "events"), "base")
	src.branch(t, "main", "b1")
	if out := py(filepath.Join(src.root, "b1", "gold", "events"), how); !strings.Contains(out, `"version": 2`) {
		t.Fatalf("the batch is not versions 1 and 2: %s", out)
	}
	return src, python
}

// TestDeltaIntermediateVersionsAreAudited: a batch of two versions, the
// first adding rows with a NULL id and a negative amount, the second
// taking them away (an overwrite of the table, or a DELETE that rewrites
// the file). Merged, main's version 1 holds those rows: delta-rs reads
// them with DeltaTable(uri, version=1). So not_null and range fail (or a
// where that selects them), naming the version; row_count and
// volume_change judge the batch's last version, as the table's readers
// read it by default. Before, the audit read the last version only and
// passed.
func TestDeltaIntermediateVersionsAreAudited(t *testing.T) {
	for _, how := range []string{"overwrite", "delete"} {
		t.Run(how, func(t *testing.T) {
			src, python := deltaVersionsBatch(t, how)
			// The merge: main becomes the batch's branch (nothing else
			// moved main), and delta-rs reads version 1 there.
			src.branch(t, "b1", "merged")
			out, err := exec.Command(python, "-c", deltaVersions, filepath.Join(src.root, "merged", "gold", "events"), "read", "1").CombinedOutput()
			if err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			var read struct {
				NullIDs  int `json:"null_ids"`
				Negative int `json:"negative"`
			}
			if err := json.Unmarshal(out, &read); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if read.NullIDs != 1 || read.Negative != 1 {
				t.Fatalf("delta-rs at version 1 of the published table: %s, want the batch's NULL id and negative amount", out)
			}
			final := map[string]string{"overwrite": "2 rows", "delete": "4 rows"}[how]
			rep := deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id"},
				Check{Name: "batch ids", Kind: KindNotNull, Table: "events", Column: "id", Scope: ScopeBatch},
				Check{Name: "amounts", Kind: KindRange, Table: "events", Column: "amount", Min: f64(0)},
				Check{Name: "region a amounts", Kind: KindRange, Table: "events", Column: "amount", Min: f64(0), Where: "region = 'a'"},
				Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(1)},
			)
			if rep.Passed {
				t.Fatalf("the audit passed a batch whose version 1 main's readers read with a NULL id: %s", checkMessages(rep))
			}
			for _, c := range rep.Checks {
				switch c.Name {
				case "rows":
					if c.Status != schemas.StatusPass || c.Observed != final {
						t.Errorf("%s: %s %q, want pass %q (the last version's)", c.Name, c.Status, c.Observed, final)
					}
				case "ids", "batch ids", "amounts", "region a amounts":
					if c.Status != schemas.StatusFail || !strings.Contains(c.Observed, "1 failing of 2 rows") || !strings.Contains(c.Message, "version 1") {
						t.Errorf("%s: %s %q %q, want a fail naming version 1's row", c.Name, c.Status, c.Observed, c.Message)
					}
				}
			}
		})
	}
}

// interimFixture: main's table (deltaFixture: part-b active, 30 clean
// rows); the batch's version 2 adds part-c (7 clean rows) and part-d (5
// rows of NULL ids, amounts 0..4), version 3 removes part-d (with the
// actions after it, e.g. a metaData) and adds part-e.
func interimFixture(t *testing.T, v3 ...string) *dirSource {
	src := deltaFixture(t)
	src.write(t, "b1", "gold/events/part-c.parquet", deltaRows(200, 7, false))
	src.write(t, "b1", "gold/events/part-d.parquet", deltaRows(300, 5, true))
	src.write(t, "b1", "gold/events/part-e.parquet", deltaRows(400, 3, false))
	writeDeltaCommit(t, src, "b1", "gold/events", 2, deltaAdd("part-c.parquet"), deltaAdd("part-d.parquet"))
	writeDeltaCommit(t, src, "b1", "gold/events", 3, append([]string{deltaRemove("part-d.parquet"), deltaAdd("part-e.parquet")}, v3...)...)
	return src
}

// TestDeltaIntermediateVersionsWhichChecksReadThem: of the checks judged
// row by row, a stat's upper bound of a max reads the rows of part-d (added
// by version 2, removed by version 3), as does a where; a stat's lower bound
// of a max, mostly and the table's checks judge the last version.
func TestDeltaIntermediateVersionsWhichChecksReadThem(t *testing.T) {
	src := interimFixture(t)
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "max amount", Kind: KindStat, Table: "events", Column: "amount", Stat: StatMax, Max: f64(3)},
		Check{Name: "max amount at least", Kind: KindStat, Table: "events", Column: "amount", Stat: StatMax, Min: f64(1000)},
		Check{Name: "ids where small", Kind: KindNotNull, Table: "events", Column: "id", Where: "amount < 2"},
		Check{Name: "ids where big", Kind: KindNotNull, Table: "events", Column: "id", Where: "amount > 50"},
		Check{Name: "ids mostly", Kind: KindNotNull, Table: "events", Column: "id", Mostly: f64(0.5)},
		Check{Name: "unique ids", Kind: KindUnique, Table: "events", Column: "id"},
	)
	want := map[string]string{"max amount": schemas.StatusFail, "max amount at least": schemas.StatusFail,
		"ids where small": schemas.StatusFail, "ids where big": schemas.StatusPass, "ids mostly": schemas.StatusPass, "unique ids": schemas.StatusPass}
	for _, c := range rep.Checks {
		if w, ok := want[c.Name]; ok && c.Status != w {
			t.Errorf("%s: %s %q %q, want %s", c.Name, c.Status, c.Observed, c.Message, w)
		}
	}
	for _, c := range rep.Checks {
		switch c.Name {
		case "max amount":
			// The last version's max is 99: it fails there too, and the
			// observed value says part-d's rows were read (amount 4 > 3).
			if !strings.Contains(c.Observed, "; 1 failing of 5 rows in files") {
				t.Errorf("%s: %q", c.Name, c.Observed)
			}
		case "ids where small":
			if !strings.Contains(c.Observed, "; 2 failing of 2 rows in files") || !strings.Contains(c.Message, "version 2 adds gold/events/part-d.parquet, version 3 removes it") {
				t.Errorf("%s: %q %q", c.Name, c.Observed, c.Message)
			}
		case "max amount at least", "ids mostly", "unique ids":
			if strings.Contains(c.Observed, "in files the batch's versions") {
				t.Errorf("%s judges the last version, yet read the intermediate rows: %q", c.Name, c.Observed)
			}
		}
	}
}

// TestDeltaIntermediateFilesAreRefusedOrBudgeted: the intermediate files
// are downloaded within audit.max_files with the table's (4 files: part-b,
// c, e and d); one the batch adds under another schema than the last
// version's (version 3 drops a column; one it adds is NULL in the file)
// or of another size than its add action states refuses the table.
func TestDeltaIntermediateFilesAreRefusedOrBudgeted(t *testing.T) {
	clean := func(t *testing.T, v3 ...string) *dirSource {
		src := interimFixture(t, v3...)
		src.write(t, "b1", "gold/events/part-d.parquet", deltaRows(300, 5, false))
		return src
	}
	run := func(t *testing.T, src *dirSource, files int) schemas.AuditReport {
		e, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: 2, MaxFiles: files})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		rep, err := e.Run(context.Background(), Request{Dataset: "events", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "events", Path: "gold/events/", Format: FormatDelta}}, Checks: []Check{idsNotNull}}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(t, clean(t), 4); !rep.Passed {
		t.Errorf("max_files 4: %s", checkMessages(rep))
	}
	src := clean(t)
	wantRefused(t, run(t, src, 3), "4 files of")
	if n := src.downloaded("b1", "gold/events/part-d.parquet"); n != 0 {
		t.Errorf("part-d downloaded %d times over the budget", n)
	}
	wider := strings.Replace(deltaMeta(), `\"metadata\":{}}]}`, `\"metadata\":{}},{\"name\":\"note\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}`, 1)
	if wider == deltaMeta() {
		t.Fatal("the fixture's schema did not change")
	}
	// A column the last version adds (a schema evolution) is NULL in
	// part-d, as in the table's files before it: part-d is read as an
	// intermediate file, its clean rows passing, its NULL ids failing
	// (interimFixture's). Before, a batch of delta-rs's append with
	// schema_mode="merge" after a version whose file a later one removes
	// was refused (TestHonestWritersPass/delta_cdf_evolve).
	if rep := run(t, clean(t, wider), 10); !rep.Passed {
		t.Errorf("a column added by the last version: %s", checkMessages(rep))
	}
	if rep := run(t, interimFixture(t, wider), 10); rep.Passed || !strings.Contains(checkMessages(rep), "version 2 adds gold/events/part-d.parquet, version 3 removes it") {
		t.Errorf("a column added by the last version, part-d's NULL ids: passed %v: %s", rep.Passed, checkMessages(rep))
	}
	// A column part-d's version has and the last version does not is
	// still refused: readers of version 2 read it from part-d.
	narrower := strings.Replace(deltaMeta(), `,{\"name\":\"region\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}`, "", 1)
	if narrower == deltaMeta() {
		t.Fatal("the fixture's schema did not change")
	}
	wantRefused(t, run(t, clean(t, narrower), 10), "version 2 adds data file gold/events/part-d.parquet, which version 3 removes, under another schema")
	sized := clean(t)
	writeDeltaCommit(t, sized, "b1", "gold/events", 2, deltaAdd("part-c.parquet"),
		`{"add":{"path":"part-d.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`)
	wantRefused(t, run(t, sized, 10), "the log says data file gold/events/part-d.parquet (version 2) has 1 bytes")
}

// TestDeltaIntermediateFileHoldingALaterColumnIsRefused: part-d, added by
// version 2 under the schema of id, amount and region and removed by
// version 3, which adds column note, holds a note of its own: readers of
// version 2 read its rows without it (delta-rs leaves a column outside
// the version's schema out), the audit would read them with it. A check
// whose where names note passed on part-d's NULL ids, which readers of
// version 2 read (note 'x' left them out of the where). The same part-d
// without note fails the check.
func TestDeltaIntermediateFileHoldingALaterColumnIsRefused(t *testing.T) {
	wider := strings.Replace(deltaMeta(), `\"metadata\":{}}]}`, `\"metadata\":{}},{\"name\":\"note\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}`, 1)
	if wider == deltaMeta() {
		t.Fatal("the fixture's schema did not change")
	}
	check := Check{Name: "ids without a note", Kind: KindNotNull, Table: "events", Column: "id", Where: "note IS NULL"}
	fixture := func(t *testing.T) *dirSource {
		src := interimFixture(t, wider)
		// part-e, version 3's, is written with note, as the schema's
		// evolution writes it.
		src.write(t, "b1", "gold/events/part-e.parquet", "SELECT i::BIGINT AS id, (i % 100)::DOUBLE AS amount, NULL::VARCHAR AS note FROM range(400, 403) r(i)")
		return src
	}
	src := fixture(t)
	src.write(t, "b1", "gold/events/part-d.parquet", "SELECT NULL::BIGINT AS id, (i % 100)::DOUBLE AS amount, 'x' AS note FROM range(300, 305) r(i)")
	wantRefused(t, deltaAudit(t, src, "b1", FormatDelta, check), "version 2 adds data file gold/events/part-d.parquet, which version 3 removes, holding column \"note\"")
	if rep := deltaAudit(t, fixture(t), "b1", FormatDelta, check); rep.Passed {
		t.Errorf("part-d without note: passed %v: %s", rep.Passed, checkMessages(rep))
	}
}

// TestDeltaIntermediateFileHoldingALaterStructFieldIsRefused: as
// TestDeltaIntermediateFileHoldingALaterColumnIsRefused, for a field b of
// struct column st that version 3 adds to version 2's st.
func TestDeltaIntermediateFileHoldingALaterStructFieldIsRefused(t *testing.T) {
	withSt := func(fields string) string {
		m := strings.Replace(deltaMeta(), `\"metadata\":{}}]}`, `\"metadata\":{}},{\"name\":\"st\",\"type\":{\"type\":\"struct\",\"fields\":[`+fields+`]},\"nullable\":true,\"metadata\":{}}]}`, 1)
		if m == deltaMeta() {
			t.Fatal("the fixture's schema did not change")
		}
		return m
	}
	a := `{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}`
	b := `{\"name\":\"b\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}`
	check := Check{Name: "ids without st.b", Kind: KindNotNull, Table: "events", Column: "id", Where: "st.b IS NULL"}
	src := interimFixture(t, withSt(a+","+b))
	writeDeltaCommit(t, src, "b1", "gold/events", 2, withSt(a), deltaAdd("part-c.parquet"), deltaAdd("part-d.parquet"))
	src.write(t, "b1", "gold/events/part-e.parquet", "SELECT i::BIGINT AS id, (i % 100)::DOUBLE AS amount, {'a': i, 'b': NULL::VARCHAR} AS st FROM range(400, 403) r(i)")
	src.write(t, "b1", "gold/events/part-d.parquet", "SELECT NULL::BIGINT AS id, (i % 100)::DOUBLE AS amount, {'a': i, 'b': 'x'} AS st FROM range(300, 305) r(i)")
	wantRefused(t, deltaAudit(t, src, "b1", FormatDelta, check), "version 2 adds data file gold/events/part-d.parquet, which version 3 removes, holding field \"st.b\"")
}
