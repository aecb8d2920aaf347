package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// s3Writer runs tests/interop/s3writers.py: a user's job writing through
// lakeFS's S3 gateway with the lakeFS key as its AWS credentials.
func (e *e2e) s3Writer(t *testing.T, ctx context.Context, python string, args ...string) map[string]any {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(repoDir, "tests", "interop", "s3writers.py"))
	must(t, err)
	cmd := exec.CommandContext(ctx, python, append([]string{script, args[0], "--endpoint", e.Stack.LakeFSEndpoint}, args[1:]...)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "AWS_ACCESS_KEY_ID="+e.Stack.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+e.Stack.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("s3writers.py %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 30))
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("s3writers.py output %q: %v", stdout.String(), err)
	}
	return out
}

// eventsDatasets adds the datasets the S3 writers write: events (Parquet
// files) and events_delta (a Delta table).
func eventsDatasets(cfg *config.Config) {
	one := 1.0
	for name, format := range map[string]string{"events": audit.FormatParquet, "events_delta": audit.FormatDelta} {
		cfg.Datasets[name] = config.Dataset{Repository: "lake", Target: "main", WriteTimeout: config.Duration(5 * time.Minute),
			AbortedRetention: config.Duration(time.Hour),
			Suite: audit.Suite{
				Tables: []audit.Table{{Name: "events", Path: "gold/" + name + "/", Format: format}},
				Checks: []audit.Check{
					{Name: "event_id_not_null", Kind: audit.KindNotNull, Table: "events", Column: "event_id"},
					{Name: "all_rows", Kind: audit.KindRowCount, Table: "events", Min: &one},
					{Name: "batch_rows", Kind: audit.KindRowCount, Table: "events", Min: &one, Scope: audit.ScopeBatch},
				}}}
	}
}

// landed lands a batch of dataset and returns where to write.
func (e *e2e) landed(t *testing.T, ctx context.Context, dataset, batch string) schemas.BranchReady {
	t.Helper()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: dataset, ExpectedWrites: []string{"events"},
		Producer: "s3-writer-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	ready := ev.(schemas.BranchReady)
	if want := "s3://lake/" + ready.Branch + "/"; ready.S3URI != want {
		t.Fatalf("BranchReady s3_uri %q, want %q", ready.S3URI, want)
	}
	return ready
}

// completed says the write is done and returns the batch's outcome.
func (e *e2e) completed(t *testing.T, ctx context.Context, dataset, batch string) schemas.Event {
	t.Helper()
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: dataset, Write: "events",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	return final
}

func checkByName(rep schemas.AuditReport, name string) schemas.CheckResult {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return schemas.CheckResult{}
}

// TestS3GatewayBoto3Writer: a boto3 job writes Parquet (pyarrow) under the
// s3_uri that BranchReady announced, through lakeFS's S3 gateway; lakewap
// audits it and publishes it.
func TestS3GatewayBoto3Writer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon and Python writers; skipped with -short")
	}
	python, err := interopPython()
	if err != nil {
		t.Skipf("S3 writer test skipped: %v; scripts/pyenv.sh installs boto3 (./test.sh runs it)", err)
	}
	e := startE2E(t, eventsDatasets)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ready := e.landed(t, ctx, "events", "boto-1")
	out := e.s3Writer(t, ctx, python, "boto3", "--uri", ready.S3URI+"gold/events/part-0.parquet", "--start", "1", "--rows", "50")
	t.Logf("boto3 wrote %v", out)
	final := e.completed(t, ctx, "events", "boto-1")
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("boto3 batch ended with %s: %+v", final.EventType(), final)
	}
	if c := checkByName(pub.Report, "batch_rows"); c.Observed != "50 rows" {
		t.Errorf("batch_rows observed %q, want the 50 rows boto3 wrote", c.Observed)
	}
	rows, err := e.CountRows(ctx, "main", "gold/events/", "")
	must(t, err)
	if rows != 50 {
		t.Errorf("main has %d rows under gold/events/, want 50", rows)
	}
}

// TestDeltaTableEndToEnd: Python deltalake writes a Delta table on the batch
// branch through the S3 gateway in two commits, the second of which
// overwrites the first's file (which has NULL ids). Merged, main's version
// 0 would hold those NULL ids for delta-rs's time travel, Spark's VERSION
// AS OF and CDF readers: not_null reads the file and the batch is aborted
// (before, lakewap audited the last version only and published it). The
// same two commits with clean rows are published, the removed file still
// in the repository. A third batch appends rows with NULL ids: its audit
// fails and it is aborted. audit.blockstore is set: the sizes lakeFS lists
// for what deltalake wrote through the gateway, log included, are the
// stored ones (stored_sizes says nothing).
func TestDeltaTableEndToEnd(t *testing.T) {
	e, python := deltaE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ready := e.landed(t, ctx, "events_delta", "delta-0")
	uri := ready.S3URI + "gold/events_delta"
	e.s3Writer(t, ctx, python, "delta", "--uri", uri, "--mode", "append", "--start", "0", "--rows", "20", "--null-ids", "20")
	if v := e.s3Writer(t, ctx, python, "delta", "--uri", uri, "--mode", "overwrite", "--start", "100", "--rows", "30"); v["version"] != 1.0 {
		t.Fatalf("second write is version %v, want 1", v["version"])
	}
	final := e.completed(t, ctx, "events_delta", "delta-0")
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Report == nil {
		t.Fatalf("delta batch 0 (NULL ids in version 0, overwritten by version 1) ended with %s: %+v", final.EventType(), final)
	}
	if c := checkByName(*ab.Report, "event_id_not_null"); c.Status != schemas.StatusFail ||
		c.Observed != "0 null rows of 30; 20 failing of 20 rows in files the batch's versions added and removed" || !strings.Contains(c.Message, "version 0 adds") {
		t.Errorf("event_id_not_null: %s %q %q, want a fail naming version 0's 20 NULL ids", c.Status, c.Observed, c.Message)
	}
	if c := checkByName(*ab.Report, "all_rows"); c.Status != schemas.StatusPass || c.Observed != "30 rows" {
		t.Errorf("all_rows: %s %q, want pass with the last version's 30 rows", c.Status, c.Observed)
	}
	if objs, err := e.Lake.List(ctx, "lake", "main", "gold/events_delta/"); err != nil || len(objs) != 0 {
		t.Fatalf("main holds %d objects of the aborted batch (%v)", len(objs), err)
	}

	ready = e.landed(t, ctx, "events_delta", "delta-1")
	uri = ready.S3URI + "gold/events_delta"
	v0 := e.s3Writer(t, ctx, python, "delta", "--uri", uri, "--mode", "append", "--start", "0", "--rows", "20")
	v1 := e.s3Writer(t, ctx, python, "delta", "--uri", uri, "--mode", "overwrite", "--start", "100", "--rows", "30")
	t.Logf("deltalake commits: %v then %v", v0, v1)
	if v1["version"] != 1.0 {
		t.Fatalf("second write is version %v, want 1", v1["version"])
	}
	final = e.completed(t, ctx, "events_delta", "delta-1")
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("delta batch 1 ended with %s: %+v", final.EventType(), final)
	}
	for name, want := range map[string]string{"all_rows": "30 rows", "batch_rows": "30 rows",
		"event_id_not_null": "0 null rows of 30; 0 failing of 20 rows in files the batch's versions added and removed"} {
		if c := checkByName(pub.Report, name); c.Observed != want || c.Status != schemas.StatusPass {
			t.Errorf("%s: %s %q (%s), want pass %q", name, c.Status, c.Observed, c.Message, want)
		}
	}
	// The removed file is still in the repository: read as plain Parquet the
	// table has 50 rows.
	rows, err := e.CountRows(ctx, "main", "gold/events_delta/", "")
	must(t, err)
	if rows != 50 {
		t.Errorf("main holds %d rows in Parquet files under the table, want 50 (the removed file's 20 too)", rows)
	}

	ready = e.landed(t, ctx, "events_delta", "delta-2")
	v2 := e.s3Writer(t, ctx, python, "delta", "--uri", ready.S3URI+"gold/events_delta", "--mode", "append", "--start", "200", "--rows", "10", "--null-ids", "10")
	if v2["version"] != 2.0 {
		t.Fatalf("append is version %v, want 2", v2["version"])
	}
	final = e.completed(t, ctx, "events_delta", "delta-2")
	ab, ok = final.(schemas.BatchAborted)
	if !ok || ab.Report == nil {
		t.Fatalf("delta batch 2 ended with %s: %+v", final.EventType(), final)
	}
	if c := checkByName(*ab.Report, "event_id_not_null"); c.Status != schemas.StatusFail || c.Observed != "10 null rows of 40" {
		t.Errorf("event_id_not_null: %s %q, want fail with 10 null rows of 40", c.Status, c.Observed)
	}
	if c := checkByName(*ab.Report, "batch_rows"); c.Observed != "10 rows" {
		t.Errorf("batch_rows observed %q, want the 10 rows the batch's commit added", c.Observed)
	}
	for _, c := range ab.Report.Checks {
		if c.Kind == "stored_sizes" || c.Kind == "foreign_addresses" {
			t.Errorf("%s on what deltalake wrote through the gateway: %s %q", c.Name, c.Status, c.Observed)
		}
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if head.ID != pub.CommitID {
		t.Errorf("main moved to %s after the aborted batch; published commit was %s", head.ID, pub.CommitID)
	}
}

// TestDeltaChangeDataFeedEndToEnd: deltalake makes a table with the change
// data feed on (one batch), then a second batch UPDATEs rows of it, which
// writes change data files under _change_data/ that the commit names.
// lakewap compares them with the commit's data files and publishes; before,
// they were unaudited objects and the batch was aborted (users with the
// feed on could not publish an UPDATE, DELETE or MERGE). A third batch
// DELETEs rows, and its change data file is rewritten with an insert of a
// NULL id before WriteComplete: CDF readers would read the row, no data
// file has it, the batch is aborted. audit.blockstore is set: the change
// data files lakewap read are judged by their stored sizes too.
func TestDeltaChangeDataFeedEndToEnd(t *testing.T) {
	e, python := deltaE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ready := e.landed(t, ctx, "events_delta", "cdf-1")
	e.s3Writer(t, ctx, python, "delta", "--uri", ready.S3URI+"gold/events_delta", "--mode", "append", "--start", "0", "--rows", "20", "--cdf")
	if final := e.completed(t, ctx, "events_delta", "cdf-1"); final.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch cdf-1 ended with %s: %+v", final.EventType(), final)
	}

	ready = e.landed(t, ctx, "events_delta", "cdf-2")
	if v := e.s3Writer(t, ctx, python, "delta", "--uri", ready.S3URI+"gold/events_delta", "--mode", "update", "--predicate", "event_id < 5"); v["version"] != 1.0 {
		t.Fatalf("the update is version %v, want 1", v["version"])
	}
	final := e.completed(t, ctx, "events_delta", "cdf-2")
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("batch cdf-2 (an UPDATE with change data) ended with %s: %+v", final.EventType(), final)
	}
	for _, c := range pub.Report.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("%s: %s %q %s", c.Name, c.Status, c.Observed, c.Message)
		}
	}
	cdc, err := e.Lake.List(ctx, "lake", "main", "gold/events_delta/_change_data/")
	must(t, err)
	if len(cdc) == 0 {
		t.Fatal("main has no change data files: the update wrote none")
	}

	ready = e.landed(t, ctx, "events_delta", "cdf-3")
	e.s3Writer(t, ctx, python, "delta", "--uri", ready.S3URI+"gold/events_delta", "--mode", "delete", "--predicate", "event_id = 7")
	files, err := e.Lake.List(ctx, "lake", ready.Branch, "gold/events_delta/_change_data/")
	must(t, err)
	var forged string
	for _, f := range files {
		if !slices.ContainsFunc(cdc, func(o lakefs.Object) bool { return o.Path == f.Path }) {
			forged = f.Path
		}
	}
	if forged == "" {
		t.Fatal("the delete wrote no change data file")
	}
	// The same path, one more row: an insert of a NULL id; the commit's
	// cdc action given the new size.
	get := func(p string) []byte {
		var buf bytes.Buffer
		must(t, e.Lake.Download(ctx, "lake", ready.Branch, p, &buf))
		return buf.Bytes()
	}
	old := get(forged)
	forgedBytes := withNullEventID(t, old)
	must(t, e.Lake.Upload(ctx, "lake", ready.Branch, forged, bytes.NewReader(forgedBytes)))
	commit := "gold/events_delta/_delta_log/00000000000000000002.json"
	lines := strings.Split(string(get(commit)), "\n")
	sized := false
	for i, l := range lines {
		if strings.HasPrefix(l, `{"cdc":`) && strings.Contains(l, fmt.Sprintf(`"size":%d,`, len(old))) {
			lines[i], sized = strings.Replace(l, fmt.Sprintf(`"size":%d,`, len(old)), fmt.Sprintf(`"size":%d,`, len(forgedBytes)), 1), true
		}
	}
	if !sized {
		t.Fatalf("commit 2 has no cdc action of size %d: %s", len(old), strings.Join(lines, "\n"))
	}
	must(t, e.Lake.Upload(ctx, "lake", ready.Branch, commit, strings.NewReader(strings.Join(lines, "\n"))))
	final = e.completed(t, ctx, "events_delta", "cdf-3")
	ab, ok := final.(schemas.BatchAborted)
	if !ok || ab.Report == nil {
		t.Fatalf("batch cdf-3 (forged change data) ended with %s: %+v", final.EventType(), final)
	}
	if c := checkByName(*ab.Report, "event_id_not_null"); c.Status != schemas.StatusError || !strings.Contains(c.Message, "in no data file their version adds") {
		t.Errorf("event_id_not_null: %s %q, want an error naming the change data row", c.Status, c.Message)
	}
}

// withNullEventID is a Parquet file of the rows of data plus one insert of
// a NULL event_id, written by DuckDB in-process (a Python child for this
// once died of SIGABRT in CI, with its stderr unread).
func withNullEventID(t *testing.T, data []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.parquet"), filepath.Join(dir, "out.parquet")
	must(t, os.WriteFile(in, data, 0o600))
	db, err := sql.Open("duckdb", "")
	must(t, err)
	defer db.Close()
	_, err = db.Exec(fmt.Sprintf(`COPY (SELECT * FROM read_parquet('%s') UNION ALL BY NAME
		SELECT NULL::BIGINT AS event_id, 1.0::DOUBLE AS amount, 'view' AS kind, 'insert' AS _change_type) TO '%s' (FORMAT parquet)`, in, out))
	must(t, err)
	b, err := os.ReadFile(out)
	must(t, err)
	return b
}

// deltaE2E is the daemon on the real lakeFS for a Delta end-to-end test
// (the events datasets, audit.blockstore set) and the Python with
// deltalake; the test is skipped with -short or without deltalake.
func deltaE2E(t *testing.T) (*e2e, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the daemon and Python writers; skipped with -short")
	}
	python, err := interopPython()
	if err != nil {
		t.Skipf("Delta end-to-end test skipped: %v; scripts/pyenv.sh installs deltalake (./test.sh runs it)", err)
	}
	e := startE2EOn(t, devstack.Options{}, func(s *devstack.Stack, cfg *config.Config) {
		eventsDatasets(cfg)
		cfg.Audit.Blockstore = &config.Blockstore{Type: "local", Path: s.BlockstorePath}
	}, daemon.Options{})
	return e, python
}
