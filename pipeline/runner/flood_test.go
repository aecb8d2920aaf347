package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/ingest"
	"github.com/lakewap/lakewap/internal/runstore"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// TestJunkFloodLeavesStateBoundedAndOtherDatasetsPublishing pushes 100,000
// junk events through the real ingest stage into the runner, over the
// sealed store (internal/runstore) on a compacted in-memory changelog: a
// third undecodable bytes, a third WriteComplete events of batches that
// never land, a third BatchLanded events of one dataset with deadlines years
// away, every batch id new. Then the runs the runner holds and the
// changelog's live records and bytes are within what the bounds allow
// (max_pending_runs, the dataset's max_open_runs, max_finished_runs), the
// heap grew by less than a generous allowance per allowed run, and a batch
// of another dataset, landed after the flood, publishes. Counts, not time.
func TestJunkFloodLeavesStateBoundedAndOtherDatasetsPublishing(t *testing.T) {
	flood := 100_000
	if testing.Short() {
		flood = 10_000
	}
	const (
		maxPending  = 100
		maxOpen     = 50
		maxFinished = 100
	)
	changelog := &compactedLog{latest: map[string]logged{}}
	store, err := runstore.New(runstore.Config{Inner: changelog, Key: []byte(strings.Repeat("s", 32)),
		Datasets: func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main"}, n == "billing" || n == "orders"
		}})
	if err != nil {
		t.Fatal(err)
	}
	notes := &publishedNotifier{published: map[string]bool{}}
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Store, c.Notifier = store, notes
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour, MaxWriteTimeout: 2 * time.Hour}, n == "billing" || n == "orders"
		}
		c.Policy.MaxPendingRuns, c.Policy.MaxOpenRuns, c.Policy.MaxFinishedRuns = maxPending, maxOpen, maxFinished
	})
	stage := ingest.Wrap(ingest.Config{Codec: testCodec, Counted: f.r.CountInput, RequestsTopic: requestsTopic, Rules: schemas.Rules{
		Known:              func(n string) bool { _, ok := f.cfg.Datasets(n); return ok },
		SourceAllowed:      func(n, ref string) bool { s, _ := f.cfg.Datasets(n); return s.AllowsSource(ref) },
		MaxDeadlineHorizon: 10 * 365 * 24 * time.Hour,
	}}, f.r)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	far := now.Add(5 * 365 * 24 * time.Hour)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	reasons := map[string]int{}
	for i := range flood {
		id := fmt.Sprint("junk-", i)
		var value []byte
		switch i % 3 {
		case 0:
			value = append([]byte("\x00junk "), id...)
		case 1:
			value = avro(t, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "fact", OccurredAt: now})
		default:
			value = avro(t, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"fact"}, WriteDeadline: &far,
				Producer: "flood", OccurredAt: now})
		}
		err := stage.Handle(ctx, kafka.Message{Topic: inputTopic, Key: []byte(id), Value: value})
		var poison *consumer.PoisonError
		switch {
		case errors.As(err, &poison):
			reasons[poison.Reason]++
		case err != nil:
			t.Fatalf("%s: %v (neither applied nor a dead letter)", id, err)
		default:
			reasons["applied"]++
		}
	}
	// The flood's aborts are sent, so the oldest finished runs can go.
	allowed := maxPending + maxOpen + maxFinished
	deadline := time.Now().Add(60 * time.Second)
	for len(f.r.Runs()) > allowed {
		if time.Now().After(deadline) {
			t.Fatalf("the runner holds %d runs after the flood, the bounds allow %d", len(f.r.Runs()), allowed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	records, recordBytes := changelog.live()
	t.Logf("%d junk events: %v; the runner holds %d runs, the changelog %d live records (%d bytes) of %d written; heap %d -> %d bytes",
		flood, reasons, len(f.r.Runs()), records, recordBytes, changelog.writes(), before.HeapAlloc, after.HeapAlloc)
	count := inputCounter{r: f.r}
	if got, want := count.get("undecodable/dead_letter"), (flood+2)/3; got != want {
		t.Errorf("%d undecodable dead letters, want %d", got, want)
	}
	if got, want := reasons[RefusedTooManyPending], flood/3-maxPending; got < want {
		t.Errorf("%d writes refused too_many_pending, want at least %d", got, want)
	}
	if records > allowed+2 {
		t.Errorf("the changelog holds %d live records, the bounds allow %d and the partition's two marks", records, allowed)
	}
	const perRecord = 4 << 10 // a junk run's record is about 1 KB
	if recordBytes > allowed*perRecord {
		t.Errorf("the changelog's live records hold %d bytes, more than %d per allowed run", recordBytes, perRecord)
	}
	// The heap may hold what the allowed runs need and fixed costs; the
	// flood's 100,000 runs kept would be far more (hundreds of MB).
	const perRun, fixed = 16 << 10, 16 << 20
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > int64(allowed*perRun+fixed) {
		t.Errorf("the heap grew by %d bytes over the flood, more than %d (%d allowed runs × %d + %d)", grew, allowed*perRun+fixed, allowed, perRun, fixed)
	}

	// Another dataset publishes after the flood.
	for _, ev := range []schemas.Event{
		schemas.BatchLanded{BatchID: "after-flood", Dataset: "orders", ExpectedWrites: []string{"fact"}, Producer: "t", OccurredAt: now},
		schemas.WriteComplete{BatchID: "after-flood", Dataset: "orders", Write: "fact", OccurredAt: now},
	} {
		if err := stage.Handle(ctx, kafka.Message{Topic: inputTopic, Key: []byte("after-flood"), Value: avro(t, ev)}); err != nil {
			t.Fatalf("%s of orders after the flood: %v", ev.EventType(), err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); !notes.was("orders/after-flood"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r, _ := f.run("orders", "after-flood")
			t.Fatalf("orders' batch after the flood did not publish: %s (%s) %s", r.State, r.Reason, r.Detail)
		}
	}
}

// compactedLog is a changelog as compaction leaves it: the latest record of
// each key, in the order they were written.
type compactedLog struct {
	mu     sync.Mutex
	latest map[string]logged
	n      int
}

type logged struct {
	value []byte
	at    int
}

func (c *compactedLog) Write(_ context.Context, _ int, records ...consumer.ChangelogRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range records {
		c.n++
		if r.Value == nil {
			delete(c.latest, r.Key)
			continue
		}
		c.latest[r.Key] = logged{bytes.Clone(r.Value), c.n}
	}
	return nil
}

func (c *compactedLog) Scan(_ context.Context, _ int, fn func(string, []byte)) error {
	c.mu.Lock()
	keys := make([]string, 0, len(c.latest))
	for k := range c.latest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return c.latest[a].at - c.latest[b].at })
	records := make([]logged, len(keys))
	for i, k := range keys {
		records[i] = c.latest[k]
	}
	c.mu.Unlock()
	for i, k := range keys {
		fn(k, records[i].value)
	}
	return nil
}

// live is the number of keys the changelog holds and their bytes.
func (c *compactedLog) live() (records, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, l := range c.latest {
		size += len(k) + len(l.value)
	}
	return len(c.latest), size
}

func (c *compactedLog) writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// publishedNotifier remembers which runs were announced published.
type publishedNotifier struct {
	mu        sync.Mutex
	published map[string]bool
}

func (n *publishedNotifier) Notify(_ context.Context, pn Notification) (map[string]string, error) {
	if p, ok := pn.Event.(schemas.BatchPublished); ok {
		n.mu.Lock()
		n.published[p.Dataset+"/"+p.BatchID] = true
		n.mu.Unlock()
	}
	return pn.Receipts, nil
}

func (n *publishedNotifier) was(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.published[key]
}
