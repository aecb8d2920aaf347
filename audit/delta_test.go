package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

const deltaSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"amount","type":"double","nullable":true,"metadata":{}},{"name":"region","type":"string","nullable":true,"metadata":{}}]}`

func deltaProtocol(reader int, features ...string) string {
	if len(features) == 0 {
		return fmt.Sprintf(`{"protocol":{"minReaderVersion":%d,"minWriterVersion":2}}`, reader)
	}
	return fmt.Sprintf(`{"protocol":{"minReaderVersion":%d,"minWriterVersion":7,"readerFeatures":["%s"],"writerFeatures":["%s"]}}`,
		reader, strings.Join(features, `","`), strings.Join(features, `","`))
}

func deltaMeta(partitions ...string) string {
	cols := "[]"
	if len(partitions) > 0 {
		cols = `["` + strings.Join(partitions, `","`) + `"]`
	}
	return fmt.Sprintf(`{"metaData":{"id":"t1","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":%s,"configuration":{},"createdTime":1}}`,
		deltaSchema, cols)
}

func deltaAdd(path string, parts ...string) string {
	pv := "{}"
	if len(parts) > 0 {
		pv = `{"` + parts[0] + `":"` + parts[1] + `"}`
	}
	return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":%s,"modificationTime":1,"dataChange":true}}`, path, pv)
}

func deltaRemove(path string) string {
	return fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":2,"dataChange":true}}`, path)
}

// writeDeltaCommit writes commit version of the table at prefix on ref.
func writeDeltaCommit(t *testing.T, src *dirSource, ref, prefix string, version int, actions ...string) {
	t.Helper()
	dst := filepath.Join(src.root, ref, filepath.FromSlash(prefix), "_delta_log", fmt.Sprintf("%020d.json", version))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte(strings.Join(append([]string{`{"commitInfo":{"operation":"WRITE"}}`}, actions...), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func deltaRows(from, n int, nullIDs bool) string {
	id := "i::BIGINT"
	if nullIDs {
		id = "NULL::BIGINT"
	}
	return fmt.Sprintf("SELECT %s AS id, (i %% 100)::DOUBLE AS amount FROM range(%d, %d) r(i)", id, from, from+n)
}

// deltaFixture: on main, version 0 wrote part-a (20 rows, NULL ids) and
// version 1 replaced it by part-b (30 clean rows). part-a is still in the
// repository, as Delta leaves removed files until a vacuum.
func deltaFixture(t *testing.T) *dirSource {
	src := newDirSource(t)
	src.write(t, "main", "gold/events/part-a.parquet", deltaRows(0, 20, true))
	src.write(t, "main", "gold/events/part-b%20x.parquet", deltaRows(100, 30, false))
	writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("part-a.parquet"))
	writeDeltaCommit(t, src, "main", "gold/events", 1, deltaRemove("part-a.parquet"), deltaAdd("part-b%2520x.parquet"))
	src.branch(t, "main", "b1")
	return src
}

func deltaAudit(t *testing.T, src Source, ref string, format string, checks ...Check) schemas.AuditReport {
	t.Helper()
	e := newEngine(t, src, t.TempDir())
	rep, err := e.Run(context.Background(), Request{Dataset: "events", Repository: "repo", Ref: ref, BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "events", Path: "gold/events/", Format: format}}, Checks: checks}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func TestDeltaReadsOnlyActiveFiles(t *testing.T) {
	src := deltaFixture(t)
	checks := []Check{
		{Kind: KindNotNull, Table: "events", Column: "id"},
		{Kind: KindRowCount, Table: "events", Min: f64(1)},
	}
	rep := deltaAudit(t, src, "main", FormatDelta, checks...)
	if !rep.Passed || rep.Checks[1].Observed != "30 rows" {
		t.Errorf("delta: %+v", rep.Checks)
	}
	// The same files read as plain Parquet include the removed one.
	rep = deltaAudit(t, src, "main", FormatParquet, checks...)
	if rep.Passed || rep.Checks[1].Observed != "50 rows" {
		t.Errorf("as parquet, want the removed file's NULL ids to be seen: %+v", rep.Checks)
	}
}

// TestDeltaBatchIsWhatTheBranchCommitsAdded: the batch's versions 2 and 3
// add part-c, part-d and part-e and remove part-d. The table's and the
// batch's row counts and volume_change are the last version's (10 rows of
// the batch, 40 in all); not_null reads part-d too, whose NULL ids
// readers of main read at version 2 once the batch is merged
// (deltainterim.go), and fails in both scopes. Before, this test asserted
// that part-d's NULL ids passed.
func TestDeltaBatchIsWhatTheBranchCommitsAdded(t *testing.T) {
	src := deltaFixture(t)
	src.write(t, "b1", "gold/events/part-c.parquet", deltaRows(200, 7, false))
	src.write(t, "b1", "gold/events/part-d.parquet", deltaRows(300, 5, true))
	src.write(t, "b1", "gold/events/part-e.parquet", deltaRows(400, 3, false))
	writeDeltaCommit(t, src, "b1", "gold/events", 2, deltaAdd("part-c.parquet"), deltaAdd("part-d.parquet"))
	writeDeltaCommit(t, src, "b1", "gold/events", 3, deltaRemove("part-d.parquet"), deltaAdd("part-e.parquet"))
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "batch rows", Kind: KindRowCount, Table: "events", Min: f64(1), Scope: ScopeBatch},
		Check{Name: "all rows", Kind: KindRowCount, Table: "events", Min: f64(1)},
		Check{Name: "batch ids", Kind: KindNotNull, Table: "events", Column: "id", Scope: ScopeBatch},
		Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id"},
		Check{Name: "amounts", Kind: KindRange, Table: "events", Column: "amount", Min: f64(0), Max: f64(99)},
		Check{Name: "growth", Kind: KindVolumeChange, Table: "events", MaxGrowthPct: f64(100)},
	)
	interim := "; 5 failing of 5 rows in files the batch's versions added and removed"
	want := map[string]string{"batch rows": "10 rows", "all rows": "40 rows", "batch ids": "0 null rows of 10" + interim,
		"ids": "0 null rows of 40" + interim, "amounts": "0 rows out of range of 40 (min 0, max 29); 0 failing of 5 rows in files the batch's versions added and removed",
		"growth": "40 rows vs 30 on main (+33.3%)"}
	for _, c := range rep.Checks {
		status := schemas.StatusPass
		if strings.Contains(c.Name, "ids") {
			status = schemas.StatusFail
			if !strings.Contains(c.Message, "version 2 adds gold/events/part-d.parquet, version 3 removes it") {
				t.Errorf("%s: message %q does not name part-d and its versions", c.Name, c.Message)
			}
		}
		if c.Observed != want[c.Name] || c.Status != status {
			t.Errorf("%s: %s %q (%s), want %s %q", c.Name, c.Status, c.Observed, c.Message, status, want[c.Name])
		}
	}
}

func TestDeltaCheckpointAndPartitions(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "t/region=eu/p1.parquet", deltaRows(0, 4, false))
	src.write(t, "main", "t/region=us/p2.parquet", deltaRows(10, 6, false))
	src.write(t, "main", "t/region=us/p3.parquet", deltaRows(20, 2, false))
	src.write(t, "main", "t/old.parquet", deltaRows(0, 99, true))
	// Commits 0 and 1 are gone (log cleanup); checkpoint 1 holds the state.
	cp := filepath.Join(src.root, "main", "t", "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", 1))
	if err := os.MkdirAll(filepath.Dir(cp), 0o755); err != nil {
		t.Fatal(err)
	}
	copySQL(t, fmt.Sprintf(`COPY (
		SELECT NULL::STRUCT(path VARCHAR, "partitionValues" MAP(VARCHAR, VARCHAR), "deletionVector" STRUCT("storageType" VARCHAR)) AS add,
		       NULL::STRUCT(path VARCHAR) AS remove,
		       NULL::STRUCT(format STRUCT(provider VARCHAR), "schemaString" VARCHAR, "partitionColumns" VARCHAR[]) AS "metaData",
		       {'minReaderVersion': 1}::STRUCT("minReaderVersion" INTEGER) AS protocol
		UNION ALL SELECT NULL, NULL, {'format': {'provider': 'parquet'}, 'schemaString': %s, 'partitionColumns': ['region']}, NULL
		UNION ALL SELECT {'path': 'region=eu/p1.parquet', 'partitionValues': MAP {'region': 'eu'}, 'deletionVector': NULL}, NULL, NULL, NULL
		UNION ALL SELECT {'path': 'region=us/p2.parquet', 'partitionValues': MAP {'region': 'us'}, 'deletionVector': NULL}, NULL, NULL, NULL
		UNION ALL SELECT NULL, {'path': 'old.parquet'}, NULL, NULL
	) TO %s (FORMAT parquet)`, quoteLiteral(deltaSchema), quoteLiteral(cp)))
	writeDeltaCommit(t, src, "main", "t", 2, `{"add":{"path":"region=us/p3.parquet","partitionValues":{"region":"us"},"modificationTime":1,"dataChange":true}}`)
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Repository: "repo", Ref: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatDelta}}, Checks: []Check{
			{Kind: KindRowCount, Table: "t", Min: f64(1)},
			{Kind: KindNotNull, Table: "t", Columns: []string{"id", "region"}},
			{Name: "per region", Kind: KindSQL, Table: "t", SQL: "SELECT region, count(*) AS n FROM t GROUP BY region HAVING NOT (region = 'eu' AND n = 4 OR region = 'us' AND n = 8)"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || rep.Checks[0].Observed != "12 rows" {
		t.Errorf("checkpoint + commit 2 with partitions: %+v", rep.Checks)
	}
}

func TestDeltaLogTheReaderDoesNotUnderstandIsACheckError(t *testing.T) {
	tests := []struct {
		name    string
		commits [][]string
		want    string
	}{
		{"deletion vectors feature", [][]string{{deltaProtocol(3, "deletionVectors"), deltaMeta(), deltaAdd("part-b%2520x.parquet")}}, "reader feature deletionVectors"},
		{"deletion vector on a file", [][]string{{deltaProtocol(1), deltaMeta(),
			`{"add":{"path":"part-b%2520x.parquet","partitionValues":{},"size":1,"dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"x","sizeInBytes":1,"cardinality":1}}}`}},
			"has a deletion vector"},
		{"reader version 4", [][]string{{deltaProtocol(4), deltaMeta(), deltaAdd("part-b%2520x.parquet")}}, "protocol reader version 4"},
		{"column mapping", [][]string{{deltaProtocol(2), strings.Replace(deltaMeta(), `"configuration":{}`, `"configuration":{"delta.columnMapping.mode":"name"}`, 1),
			deltaAdd("part-b%2520x.parquet")}}, "column mapping mode name"},
		{"missing file", [][]string{{deltaProtocol(1), deltaMeta(), deltaAdd("gone.parquet")}}, "names data file gold/events/gone.parquet, which is not in the repository"},
		{"gap in the log", [][]string{{deltaProtocol(1), deltaMeta()}, nil, {deltaAdd("part-b%2520x.parquet")}}, "missing commit 1"},
		{"no log", nil, "not a Delta table"},
		{"absolute path", [][]string{{deltaProtocol(1), deltaMeta(), deltaAdd("s3://bucket/x.parquet")}}, "absolute file path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-b%20x.parquet", deltaRows(100, 30, false))
			for v, actions := range tt.commits {
				if actions != nil {
					writeDeltaCommit(t, src, "main", "gold/events", v, actions...)
				}
			}
			rep := deltaAudit(t, src, "main", FormatDelta,
				Check{Kind: KindRowCount, Table: "events", Min: f64(1)},
				Check{Name: "custom", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE false"})
			if rep.Passed {
				t.Fatalf("passed: %+v", rep.Checks)
			}
			for _, c := range rep.Checks {
				if c.Status != schemas.StatusError || !strings.Contains(c.Message, tt.want) {
					t.Errorf("%s: %s %q, want error containing %q", c.Name, c.Status, c.Message, tt.want)
				}
			}
		})
	}
}
