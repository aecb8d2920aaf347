package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// TestBatchPublishesOnlyItsTables performs the scope attacks against the
// real lakeFS server; each must leave main without anything of the batch:
//   - an object outside the dataset's tables written next to the batch's rows;
//   - a branch with the run's name made (and filled) before the batch lands;
//   - a BatchLanded whose source_ref names a branch the dataset does not allow.
func TestBatchPublishesOnlyItsTables(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	land := func(batch, source string) {
		t.Helper()
		must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", SourceRef: source, ExpectedWrites: []string{"billing_fact"},
			Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	complete := func(batch string) schemas.Event {
		t.Helper()
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
			OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		return ev
	}
	mainHas := func(prefix string) []string {
		t.Helper()
		objs, err := e.Lake.List(ctx, "lake", "main", prefix)
		must(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, o.Path)
		}
		return out
	}
	good := func(from int) string { return billingRows(from, 0, 1000, "BIGINT") }

	t.Run("object outside the tables", func(t *testing.T) {
		land("stray-1", "")
		ev, err := e.Watcher.Await(ctx, "stray-1", schemas.TypeBranchReady)
		must(t, err)
		branch := ev.(schemas.BranchReady).Branch
		must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch=stray-1/part-0.parquet", good(800000)))
		must(t, e.Lake.Upload(ctx, "lake", branch, "ops/credentials.txt", strings.NewReader("not audited\n")))
		final := complete("stray-1")
		ab, ok := final.(schemas.BatchAborted)
		if !ok || ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, "ops/credentials.txt") {
			t.Fatalf("batch ended with %+v; want aborted outside_tables naming ops/credentials.txt", final)
		}
		if got := mainHas("ops/"); len(got) != 0 {
			t.Errorf("main has %v", got)
		}
		if got := mainHas("gold/billing_fact/batch=stray-1/"); len(got) != 0 {
			t.Errorf("main has %v", got)
		}
	})

	t.Run("hidden object under the table", func(t *testing.T) {
		land("hidden-1", "")
		ev, err := e.Watcher.Await(ctx, "hidden-1", schemas.TypeBranchReady)
		must(t, err)
		branch := ev.(schemas.BranchReady).Branch
		must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch=hidden-1/part-0.parquet", good(850000)))
		// The audit skips names starting with _, DuckDB's globs and Polars read them.
		must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch=hidden-1/_part-1.parquet", good(860000)))
		final := complete("hidden-1")
		ab, ok := final.(schemas.BatchAborted)
		if !ok || ab.Reason != schemas.ReasonUnauditedObjects || ab.Detail != "1 changed objects not read by the audit: gold/billing_fact/batch=hidden-1/_part-1.parquet" {
			t.Fatalf("batch ended with %+v; want aborted unaudited_objects naming _part-1.parquet", final)
		}
		if got := mainHas("gold/billing_fact/batch=hidden-1/"); len(got) != 0 {
			t.Errorf("main has %v", got)
		}
	})

	t.Run("branch with the run's name made beforehand", func(t *testing.T) {
		branch := schemas.BranchName("billing", "pre-1")
		_, err := e.Lake.EnsureBranch(ctx, "lake", branch, "main")
		must(t, err)
		must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch=pre-1/planted.parquet", billingRows(810000, 0, 1000, "BIGINT")))
		_, err = e.Lake.Commit(ctx, "lake", branch, "planted before the batch landed", nil)
		must(t, err)
		land("pre-1", "")
		final, err := e.Watcher.Await(ctx, "pre-1", schemas.TypeBranchReady, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		if final.EventType() == schemas.TypeBranchReady {
			// What the previous main did: the writer is told to write
			// there, and the planted rows go out with the batch.
			must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch=pre-1/part-0.parquet", good(830000)))
			final = complete("pre-1")
		}
		ab, ok := final.(schemas.BatchAborted)
		if !ok || ab.Reason != schemas.ReasonInvalid || !ab.BranchKept || !strings.Contains(ab.Detail, "not created by this run") {
			t.Errorf("batch ended with %+v; want aborted invalid, the branch left alone", final)
		}
		if got := mainHas("gold/billing_fact/batch=pre-1/"); len(got) != 0 {
			t.Errorf("main has %v", got)
		}
		if _, err := e.Lake.GetCommit(ctx, "lake", branch); err != nil {
			t.Errorf("the branch that was there is gone: %v", err)
		}
	})

	t.Run("source_ref not allowed", func(t *testing.T) {
		_, err := e.Lake.EnsureBranch(ctx, "lake", "attacker", "main")
		must(t, err)
		must(t, e.WriteParquet(ctx, "attacker", "gold/billing_fact/batch=src-1/planted.parquet", billingRows(820000, 0, 1000, "BIGINT")))
		_, err = e.Lake.Commit(ctx, "lake", "attacker", "rows nobody audits", nil)
		must(t, err)
		land("src-1", "attacker")
		final, err := e.Watcher.Await(ctx, "src-1", schemas.TypeBranchReady, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		if final.EventType() == schemas.TypeBranchReady {
			must(t, e.WriteParquet(ctx, final.(schemas.BranchReady).Branch, "gold/billing_fact/batch=src-1/part-0.parquet", good(840000)))
			final = complete("src-1")
		}
		ab, ok := final.(schemas.BatchAborted)
		if !ok || ab.Reason != schemas.ReasonInvalid || !strings.Contains(ab.Detail, "source_ref") {
			t.Errorf("batch ended with %+v; want aborted invalid naming source_ref", final)
		}
		if got := mainHas("gold/billing_fact/batch=src-1/"); len(got) != 0 {
			t.Errorf("main has %v", got)
		}
	})
}

// BatchLanded.attributes are copied into the publish commit's metadata on
// the real lakeFS server; an attribute under a reserved wap. key does not
// replace lakewap's own.
func TestAttributesInPublishCommit(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "attrs-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Attributes: map[string]string{"source_system": "erp", "run_url": "https://ci.example/1", "wap.batch_id": "forged", "wap.audit": "passed=99"},
		Producer:   "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, "attrs-1", schemas.TypeBranchReady)
	must(t, err)
	must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, "gold/billing_fact/batch=attrs-1/part-0.parquet", billingRows(850000, 0, 100, "BIGINT")))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "attrs-1", Dataset: "billing", Write: "billing_fact",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, "attrs-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("batch ended with %+v", final)
	}
	c, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
	must(t, err)
	for k, want := range map[string]string{"source_system": "erp", "run_url": "https://ci.example/1", "wap.batch_id": "attrs-1"} {
		if c.Metadata[k] != want {
			t.Errorf("publish commit metadata %s = %q, want %q (all %v)", k, c.Metadata[k], want, c.Metadata)
		}
	}
	if !strings.HasPrefix(c.Metadata["wap.audit"], "passed=5 ") {
		t.Errorf("wap.audit = %q: the attribute replaced lakewap's summary", c.Metadata["wap.audit"])
	}
}

// TestScriptLinkAttributeIsNotPublished: lakeFS's UI shows a commit
// metadata key "::lakefs::<name>::url[url:ui]" as a button "Open <name>
// UI" that sets window.location to its value, and a BatchLanded's
// attributes became lakewap's publish commit's metadata: a producer's
// "javascript:" value put a button running the producer's script in
// lakeFS's UI, with the session of whoever clicked it, on lakewap's publish
// commit on main. The batch is aborted invalid naming the attribute, and
// nothing reaches main.
func TestScriptLinkAttributeIsNotPublished(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const key = "::lakefs::Audit report::url[url:ui]"
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "link-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Attributes: map[string]string{key: "javascript:fetch('/api/v1/auth/users')"},
		Producer:   "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	first, err := e.Watcher.Await(ctx, "link-1", schemas.TypeBranchReady, schemas.TypeBatchAborted)
	must(t, err)
	if ready, ok := first.(schemas.BranchReady); ok {
		// Today's path: the writer writes, the batch publishes.
		must(t, e.WriteParquet(ctx, ready.Branch, "gold/billing_fact/batch=link-1/part-0.parquet", billingRows(870000, 0, 100, "BIGINT")))
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "link-1", Dataset: "billing", Write: "billing_fact",
			OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		first, err = e.Watcher.Await(ctx, "link-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
	}
	if pub, ok := first.(schemas.BatchPublished); ok {
		c, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
		must(t, err)
		t.Fatalf("published; the publish commit's metadata %s = %q", key, c.Metadata[key])
	}
	ab, ok := first.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonInvalid || !strings.Contains(ab.Detail, "attributes."+key) {
		t.Fatalf("batch ended with %+v; want aborted invalid naming the attribute", first)
	}
}
