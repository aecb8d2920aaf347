package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Attacks on the Delta reader (issue 22): a writer who controls the
// branch's bytes makes Delta readers of main read other rows than the
// audit. Each must be refused (the table's checks error) or audited as
// the readers read it.

// cpAction is one row of a test checkpoint.
type cpAction struct {
	add, remove string
	parts       map[string]string
	stats       string // the add's, "" for none
}

// writeCheckpoint writes a classic checkpoint of version at ref: the
// protocol, the metaData (partitioned by partitions) and the actions.
func writeCheckpoint(t testing.TB, src *dirSource, ref, prefix string, version int, partitions []string, actions ...cpAction) {
	t.Helper()
	dst := filepath.Join(src.root, ref, filepath.FromSlash(prefix), "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", version))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	parts := "[]::VARCHAR[]"
	if len(partitions) > 0 {
		parts = "['" + strings.Join(partitions, "','") + "']"
	}
	rows := []string{
		`SELECT NULL::STRUCT(path VARCHAR, "partitionValues" MAP(VARCHAR, VARCHAR), "dataChange" BOOLEAN, stats VARCHAR) AS add,
		 NULL::STRUCT(path VARCHAR, "dataChange" BOOLEAN) AS remove,
		 NULL::STRUCT(id VARCHAR, format STRUCT(provider VARCHAR), "schemaString" VARCHAR, "partitionColumns" VARCHAR[], configuration MAP(VARCHAR, VARCHAR)) AS "metaData",
		 {'minReaderVersion': 1, 'minWriterVersion': 2}::STRUCT("minReaderVersion" INTEGER, "minWriterVersion" INTEGER) AS protocol`,
		fmt.Sprintf(`SELECT NULL, NULL, {'id': 't1', 'format': {'provider': 'parquet'}, 'schemaString': %s, 'partitionColumns': %s, 'configuration': MAP {}}, NULL`,
			quoteLiteral(deltaSchema), parts),
	}
	for _, a := range actions {
		switch {
		case a.add != "":
			pv := "MAP {}::MAP(VARCHAR, VARCHAR)"
			if len(a.parts) > 0 {
				var kv []string
				for k, v := range a.parts {
					kv = append(kv, quoteLiteral(k)+": "+quoteLiteral(v))
				}
				pv = "MAP {" + strings.Join(kv, ", ") + "}"
			}
			stats := "NULL"
			if a.stats != "" {
				stats = quoteLiteral(a.stats)
			}
			rows = append(rows, fmt.Sprintf("SELECT {'path': %s, 'partitionValues': %s, 'dataChange': true, 'stats': %s}, NULL, NULL, NULL", quoteLiteral(a.add), pv, stats))
		default:
			rows = append(rows, fmt.Sprintf("SELECT NULL, {'path': %s, 'dataChange': true}, NULL, NULL", quoteLiteral(a.remove)))
		}
	}
	copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", strings.Join(rows, " UNION ALL "), quoteLiteral(dst)))
}

func writeLogFile(t testing.TB, src *dirSource, ref, prefix, name, content string) {
	t.Helper()
	dst := filepath.Join(src.root, ref, filepath.FromSlash(prefix), "_delta_log", name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantRefused: every check of the report errors with a message holding want.
func wantRefused(t *testing.T, rep schemas.AuditReport, want string) {
	t.Helper()
	if rep.Passed {
		t.Fatalf("audit passed: %+v", rep.Checks)
	}
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || !strings.Contains(c.Message, want) {
			t.Errorf("%s: %s %q %q, want an error containing %q", c.Name, c.Status, c.Observed, c.Message, want)
		}
	}
}

var idsNotNull = Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id"}

// The JSON log is complete (commits 0 and 1, clean rows), and a checkpoint
// of version 1 with _last_checkpoint names a file of NULL ids. Delta
// readers start from the checkpoint and read the NULL ids; lakewap used to
// replay the JSON commits and pass.
func TestDeltaCheckpointThatDisagreesWithTheCommitsIsRefused(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/events/clean.parquet", deltaRows(0, 10, false))
	src.write(t, "main", "gold/events/nulls.parquet", deltaRows(100, 10, true))
	writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("clean.parquet"))
	writeDeltaCommit(t, src, "main", "gold/events", 1, `{"txn":{"appId":"x","version":1}}`)
	writeCheckpoint(t, src, "main", "gold/events", 1, nil, cpAction{add: "nulls.parquet"})
	writeLogFile(t, src, "main", "gold/events", "_last_checkpoint", `{"version":1,"size":3}`)
	wantRefused(t, deltaAudit(t, src, "main", FormatDelta, idsNotNull), "checkpoint 1 disagrees with the log before it")

	// A checkpoint that agrees is read, and the commit after it applies.
	src = newDirSource(t)
	src.write(t, "main", "gold/events/clean.parquet", deltaRows(0, 10, false))
	src.write(t, "main", "gold/events/more.parquet", deltaRows(50, 5, true))
	writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("clean.parquet"))
	writeCheckpoint(t, src, "main", "gold/events", 0, nil, cpAction{add: "clean.parquet"})
	writeLogFile(t, src, "main", "gold/events", "_last_checkpoint", `{"version":0,"size":3}`)
	writeDeltaCommit(t, src, "main", "gold/events", 1, deltaAdd("more.parquet"))
	rep := deltaAudit(t, src, "main", FormatDelta, idsNotNull)
	if c := rep.Checks[0]; c.Status != schemas.StatusFail || c.Observed != "5 null rows of 15" {
		t.Errorf("checkpoint 0 + commit 1: %s %q %q, want fail with 5 null rows of 15", c.Status, c.Observed, c.Message)
	}
}

// Readers take the newest checkpoint even when older commits are gone; a
// batch that adds one and deletes the commits it sums up (so that nothing
// can contradict it) changes the log by more than adding versions.
func TestDeltaBatchMayOnlyAddVersions(t *testing.T) {
	base := func(t *testing.T) *dirSource {
		src := newDirSource(t)
		src.write(t, "main", "gold/events/clean.parquet", deltaRows(0, 10, false))
		src.write(t, "main", "gold/events/nulls.parquet", deltaRows(100, 10, true))
		writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("clean.parquet"))
		writeDeltaCommit(t, src, "main", "gold/events", 1, `{"txn":{"appId":"x","version":1}}`)
		src.branch(t, "main", "b1")
		return src
	}
	tests := []struct {
		name   string
		attack func(t *testing.T, src *dirSource)
		want   string
	}{
		{"checkpoint replaces deleted commits", func(t *testing.T, src *dirSource) {
			writeCheckpoint(t, src, "b1", "gold/events", 1, nil, cpAction{add: "nulls.parquet"})
			src.remove(t, "b1", "gold/events/_delta_log/00000000000000000000.json")
			src.remove(t, "b1", "gold/events/_delta_log/00000000000000000001.json")
		}, "the batch deletes gold/events/_delta_log/00000000000000000000.json"},
		{"older commit rewritten", func(t *testing.T, src *dirSource) {
			writeDeltaCommit(t, src, "b1", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("nulls.parquet"))
		}, "the batch rewrites gold/events/_delta_log/00000000000000000000.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := base(t)
			tt.attack(t, src)
			wantRefused(t, deltaAudit(t, src, "b1", FormatDelta, idsNotNull,
				Check{Name: "batch ids", Kind: KindNotNull, Table: "events", Column: "id", Scope: ScopeBatch}), tt.want)
		})
	}
	// Adding a version is what a batch does.
	src := base(t)
	src.write(t, "b1", "gold/events/new.parquet", deltaRows(200, 3, false))
	writeDeltaCommit(t, src, "b1", "gold/events", 2, deltaAdd("new.parquet"))
	writeCheckpoint(t, src, "b1", "gold/events", 2, nil, cpAction{add: "clean.parquet"}, cpAction{add: "new.parquet"})
	writeLogFile(t, src, "b1", "gold/events", "_last_checkpoint", `{"version":2,"size":4}`)
	if rep := deltaAudit(t, src, "b1", FormatDelta, idsNotNull); !rep.Passed {
		t.Errorf("a batch adding version 2 and its checkpoint: %+v", rep.Checks)
	}
}

// Several actions on one path in one version: delta-kernel keeps a path
// added and removed in one commit active, lakewap dropped it.
func TestDeltaSeveralActionsOnOnePathAreRefused(t *testing.T) {
	tests := []struct {
		name    string
		actions []string
		want    string
	}{
		{"added and removed in one commit", []string{deltaAdd("nulls.parquet"), deltaRemove("nulls.parquet")}, "path nulls.parquet is added and removed in version 1"},
		{"removed and added in one commit", []string{deltaRemove("nulls.parquet"), deltaAdd("nulls.parquet")}, "path nulls.parquet is added and removed in version 1"},
		{"added twice", []string{deltaAdd("nulls.parquet"), deltaAdd("nulls.parquet")}, "path nulls.parquet is added twice in version 1"},
		{"two spellings of one file", []string{deltaAdd("nul%6Cs.parquet")}, "the log names file gold/events/nulls.parquet as nulls.parquet and as nul%6Cs.parquet"},
		{"remove in another spelling", []string{deltaRemove("nul%6Cs.parquet")}, "a remove of nul%6Cs.parquet names active file gold/events/nulls.parquet"},
		{"dot segments", []string{deltaAdd("x/../nulls.parquet")}, "is not a plain relative path"},
		{"remove with a deletion vector", []string{`{"remove":{"path":"nulls.parquet","deletionVector":{"storageType":"u","pathOrInlineDv":"x","sizeInBytes":1,"cardinality":1}}}`},
			"a remove of nulls.parquet with a deletion vector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/nulls.parquet", deltaRows(100, 10, true))
			first := []string{deltaProtocol(1), deltaMeta()}
			if !strings.HasPrefix(tt.name, "added") && !strings.HasPrefix(tt.name, "removed") && tt.name != "dot segments" {
				first = append(first, deltaAdd("nulls.parquet"))
			}
			writeDeltaCommit(t, src, "main", "gold/events", 0, first...)
			writeDeltaCommit(t, src, "main", "gold/events", 1, tt.actions...)
			wantRefused(t, deltaAudit(t, src, "main", FormatDelta, idsNotNull), tt.want)
		})
	}
}

// Readers that trust the log's size read a file's footer where the size
// puts it: a file whose bytes are not the size the log states is refused.
func TestDeltaFileOfAnotherSizeThanTheLogSaysIsRefused(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/events/clean.parquet", deltaRows(0, 10, false))
	writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(),
		`{"add":{"path":"clean.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`)
	wantRefused(t, deltaAudit(t, src, "main", FormatDelta, idsNotNull), "the log says data file gold/events/clean.parquet has 1 bytes")
}

// Log features lakewap does not read are refused where they appear.
func TestDeltaUnsupportedLogFilesAreRefused(t *testing.T) {
	tests := []struct{ name, file, content, want string }{
		{"v2 checkpoint", "00000000000000000001.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", `{"checkpointMetadata":{"version":1}}`, "V2 checkpoint"},
		{"sidecar", "_sidecars/3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet", "x", "sidecar file"},
		{"log compaction", "00000000000000000000.00000000000000000001.compacted.json", deltaAdd("nulls.parquet"), "log compaction file"},
		{"stale _last_checkpoint", "_last_checkpoint", `{"version":7,"size":2}`, "_last_checkpoint names checkpoint 7, and the log has no complete checkpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/clean.parquet", deltaRows(0, 10, false))
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("clean.parquet"))
			writeDeltaCommit(t, src, "main", "gold/events", 1, `{"txn":{"appId":"x","version":1}}`)
			writeLogFile(t, src, "main", "gold/events", tt.file, tt.content)
			wantRefused(t, deltaAudit(t, src, "main", FormatDelta, idsNotNull), tt.want)
		})
	}
}

// A data file overwritten in place (same key, new bytes, log untouched)
// is read by every reader of main: scope batch must include it.
func TestDeltaFileOverwrittenInPlaceIsInTheBatch(t *testing.T) {
	src := deltaFixture(t)
	src.write(t, "b1", "gold/events/part-b%20x.parquet", deltaRows(100, 30, true))
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "batch ids", Kind: KindNotNull, Table: "events", Column: "id", Scope: ScopeBatch})
	if c := rep.Checks[0]; c.Status != schemas.StatusFail || c.Observed != "30 null rows of 30" {
		t.Errorf("batch ids: %s %q %q, want fail with 30 null rows of 30", c.Status, c.Observed, c.Message)
	}
}

// Partition values as delta-kernel and delta-rs read them: "" is NULL;
// other values in the protocol's form for their type; Hive's
// __HIVE_DEFAULT_PARTITION__, on which readers differ, is refused.
func TestDeltaPartitionValuesAsTheProtocolReadsThem(t *testing.T) {
	src := newDirSource(t)
	for _, f := range []string{"a", "b", "c"} {
		src.write(t, "main", "t/"+f+".parquet", deltaRows(0, 2, false))
	}
	writeDeltaCommit(t, src, "main", "t", 0, deltaProtocol(1), deltaMeta("region"),
		deltaAdd("a.parquet", "region", "eu"), deltaAdd("b.parquet", "region", ""), deltaAdd("c.parquet", "region", ""))
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Repository: "repo", Ref: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatDelta}}, Checks: []Check{
			{Kind: KindNotNull, Table: "t", Column: "region"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusFail || c.Observed != "4 null rows of 6" {
		t.Errorf("region: %s %q %q, want fail with 4 null rows of 6", c.Status, c.Observed, c.Message)
	}

	tests := []struct{ typ, value, want string }{
		{"date", "2024-02-29", "CAST('2024-02-29' AS DATE)"},
		{"timestamp", "2024-01-02 03:04:05.123456", "CAST('2024-01-02 03:04:05.123456+00' AS TIMESTAMPTZ)"},
		{"timestamp", "2024-01-02T03:04:05Z", "CAST('2024-01-02 03:04:05+00' AS TIMESTAMPTZ)"},
		{"timestamp_ntz", "2024-01-02 03:04:05", "CAST('2024-01-02 03:04:05' AS TIMESTAMP)"},
		{"long", "-12", "CAST('-12' AS BIGINT)"},
		{"boolean", "true", "true"},
		{"integer", "", "CAST(NULL AS INTEGER)"},
		{"long", " 12", "error"},
		{"date", "2024-2-29", "error"},
		{"boolean", "TRUE", "error"},
		{"integer", "3000000000", "error"},
		{"timestamp_ntz", "2024-01-02T03:04:05Z", "error"},
		{"binary", "\\u0001", "error"},
		{"string", "__HIVE_DEFAULT_PARTITION__", "error"},
	}
	for _, tt := range tests {
		schema := fmt.Sprintf(`{"type":"struct","fields":[{"name":"p","type":%q,"nullable":true,"metadata":{}}]}`, tt.typ)
		types, err := deltaColumnTypes(schema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := partitionLiteral(&tt.value, types[0].Type)
		if err != nil {
			got = "error"
		}
		if got != tt.want {
			t.Errorf("%s %q: %s (%v), want %s", tt.typ, tt.value, got, err, tt.want)
		}
	}
}

// A checkpoint of 25 KB made one audit allocate 3.4 GB: its rows were all
// read into memory as JSON. Rows are streamed now, without their
// statistics, and a checkpoint whose actions decode to more than the log
// file budget is refused.
func TestDeltaHostileCheckpointIsReadInBoundedMemory(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/events/clean.parquet", deltaRows(0, 10, false))
	writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("clean.parquet"))
	dst := filepath.Join(src.root, "main", "gold/events/_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", 1))
	// Half a million tombstones, each with 1 KB of statistics-like text.
	copySQL(t, fmt.Sprintf(`COPY (
		SELECT NULL::STRUCT(path VARCHAR, "partitionValues" MAP(VARCHAR, VARCHAR), stats VARCHAR) AS add,
		  {'path': 'gone-' || (i %% 1000) || '.parquet', 'stats': repeat('x', 1000)}::STRUCT(path VARCHAR, stats VARCHAR) AS remove,
		  NULL::STRUCT(format STRUCT(provider VARCHAR), "schemaString" VARCHAR, "partitionColumns" VARCHAR[]) AS "metaData",
		  NULL::STRUCT("minReaderVersion" INTEGER) AS protocol
		FROM range(500000) r(i)) TO %s (FORMAT parquet, COMPRESSION zstd)`, quoteLiteral(dst)))
	st, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), MemoryLimit: "512MB", Threads: 2, MaxLogFileBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep, err := e.Run(context.Background(), Request{Repository: "repo", Ref: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "events", Path: "gold/events/", Format: FormatDelta}}, Checks: []Check{idsNotNull}}})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, rep, "the checkpoint's actions are over 8388608 bytes")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("checkpoint of %d bytes; the audit allocated %d MB on the Go heap", st.Size(), alloc>>20)
	// All it allocated, not what it held at once: a bounded multiple of the budget.
	if alloc > 128<<20 {
		t.Errorf("the audit allocated %d MB on the Go heap for a checkpoint of %d bytes, want at most 128 MB", alloc>>20, st.Size())
	}
}
