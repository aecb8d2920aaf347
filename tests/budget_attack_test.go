package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// A BatchLanded at the bounds of its attributes (64 of them, keys of 128
// bytes, values of 1024, any valid UTF-8 the validation takes: spaces, =,
// newlines, quotes, non-ASCII) is published on the real lakeFS server with
// every attribute in the publish commit's metadata, as sent. An input the
// validation takes must not make the merge fail after the audit passed.
func TestLargestAttributesReachThePublishCommit(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	attrs := map[string]string{}
	odd := []string{" ", "=", "\n", "\"", "é", "\t", ":", "/", "%", "&", "?", "#"}
	for i := range schemas.MaxAttributes {
		k := fmt.Sprintf("k%02d%s", i, odd[i%len(odd)])
		k += strings.Repeat("a", schemas.MaxWriteNameLen-len(k))
		v := fmt.Sprintf("v%02d%s", i, odd[(i+1)%len(odd)])
		v += strings.Repeat("b", schemas.MaxTextLen-len(v))
		attrs[k] = v
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "attrs-max", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Attributes: attrs, Producer: strings.Repeat("p", schemas.MaxTextLen), OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, "attrs-max", schemas.TypeBranchReady, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	br, ok := ev.(schemas.BranchReady)
	if !ok {
		t.Fatalf("batch ended with %+v", ev)
	}
	must(t, e.WriteParquet(ctx, br.Branch, "gold/billing_fact/batch=attrs-max/part-0.parquet", billingRows(860000, 0, 100, "BIGINT")))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "attrs-max", Dataset: "billing", Write: "billing_fact",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, "attrs-max", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	pub, ok := final.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("batch ended with %+v", final)
	}
	c, err := e.Lake.GetCommit(ctx, "lake", pub.CommitID)
	must(t, err)
	for k, want := range attrs {
		if got := c.Metadata[k]; got != want {
			t.Errorf("publish commit metadata %q = %.40q…, want %.40q…", k, got, want)
		}
	}
}

// A batch whose writer puts more objects in its branch than a listing may
// hold (audit.max_list_objects, here 20) is not published: its checks
// error naming the limit, and a batch within it publishes on the same
// daemon. (A guard of review 7: the lakeFS client now stops a listing one
// page past the limit, TestListingStopsPastItsLimit; 30 objects are within
// that page, so this batch meets the audit's own count, as before.)
func TestBatchOverTheListingLimitIsStoppedNamingIt(t *testing.T) {
	e := startE2E(t, func(cfg *config.Config) { cfg.Audit.MaxListObjects = 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "many-objects", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: now}))
	ev, err := e.Watcher.Await(ctx, "many-objects", schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	for i := range 30 {
		must(t, e.WriteParquet(ctx, branch, fmt.Sprintf("gold/billing_fact/batch=many-objects/part-%02d.parquet", i), billingRows(870000+i, 0, 1, "BIGINT")))
	}
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: "many-objects", Dataset: "billing", Write: "billing_fact",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, err := e.Watcher.Await(ctx, "many-objects", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	text := fmt.Sprintf("%+v", final)
	if ab, ok := final.(schemas.BatchAborted); ok && ab.Report != nil {
		text += fmt.Sprintf(" %+v", ab.Report.Checks)
	}
	if final.EventType() == schemas.TypeBatchPublished || !strings.Contains(text, "audit.max_list_objects") {
		t.Fatalf("batch of 30 objects over a listing limit of 20 ended with %s", text)
	}
	if got := e.runBatch(t, "few-objects", billingRows(880000, 0, 10, "BIGINT")); got.EventType() != schemas.TypeBatchPublished {
		t.Errorf("a batch within the limit ended with %+v", got)
	}
}
