package tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// floorInputTopic is the topic BenchmarkFloorSequence's upstream writes to.
const floorInputTopic = "floor.events"

// floorRig is the floor's handler: what a batch through lakewap's protocol
// cannot do without, and nothing else (BenchmarkFloorSequence).
type floorRig struct {
	*benchRig
	db      *sql.DB
	results *kafka.Writer
	calls   atomic.Int64

	mu       sync.Mutex
	branches map[string]string // batch id -> branch, BatchLanded to WriteComplete

	turn      sync.Mutex // one publish into main at a time
	lastMerge string     // main's head after the floor's last merge
	ranges    [][2]string
	failed    atomic.Value // error
}

// floorQuery is the raw sequence's hand query plus the batch's smallest and
// largest billing_id, the key range the table-wide unique check is judged
// by against the published files' ranges.
const floorQuery = `SELECT count(*), count(*) FILTER (WHERE billing_id IS NULL OR customer_id IS NULL),
	count(billing_id) - count(DISTINCT billing_id), count(*) FILTER (WHERE amount_cents < 0),
	count(*) FILTER (WHERE currency IS NOT NULL AND CAST(currency AS VARCHAR) NOT IN ('EUR', 'USD', 'GBP')),
	min(billing_id), max(billing_id)
	FROM read_parquet(?)`

// run reads the floor's input topic until ctx ends, each event handled on
// a goroutine of its own.
func (f *floorRig) run(ctx context.Context, topic string) error {
	c, err := kafka.NewClient(f.env.Stack.KafkaBrokers, kafka.Security{})
	if err != nil {
		return err
	}
	defer c.Close()
	_, next, err := c.Offsets(ctx, topic)
	if err != nil {
		return err
	}
	err = c.ReadPartitions(ctx, topic, next, nil, func(m kafka.Message) bool {
		go func() {
			if err := f.handle(ctx, m.Value); err != nil && ctx.Err() == nil {
				f.failed.CompareAndSwap(nil, err)
			}
		}()
		return false
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (f *floorRig) send(ctx context.Context, ev schemas.Event) error {
	v, err := f.env.Codec.Encode(ctx, f.env.Cfg.Kafka.ResultsTopic, ev)
	if err != nil {
		return err
	}
	return f.results.Write(ctx, kafka.Message{Key: []byte(ev.Batch()), Value: v})
}

func (f *floorRig) handle(ctx context.Context, value []byte) error {
	ev, err := f.env.Codec.Decode(ctx, value)
	if err != nil {
		return err
	}
	ctx = pipeline.WithCallCounter(ctx, &f.calls)
	l := f.env.Lake
	switch ev := ev.(type) {
	case schemas.BatchLanded:
		branch := "floor-" + ev.BatchID
		if _, err := l.EnsureBranch(ctx, "lake", branch, "main"); err != nil {
			return err
		}
		f.mu.Lock()
		f.branches[ev.BatchID] = branch
		f.mu.Unlock()
		return f.send(ctx, schemas.BranchReady{EventID: "r-" + ev.BatchID, BatchID: ev.BatchID, Dataset: ev.Dataset, Repository: "lake",
			Branch: branch, LakeFSURI: "lakefs://lake/" + branch + "/", ExpectedWrites: ev.ExpectedWrites, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)})
	case schemas.WriteComplete:
		f.mu.Lock()
		branch := f.branches[ev.BatchID]
		delete(f.branches, ev.BatchID)
		f.mu.Unlock()
		if branch == "" {
			return fmt.Errorf("floor: WriteComplete of %s before its BatchLanded", ev.BatchID)
		}
		return f.publish(ctx, ev, branch)
	}
	return fmt.Errorf("floor: unexpected %s", ev.EventType())
}

// publish is the floor's audit and publish of a batch whose writes are
// done: seal, find the batch's files, read them, judge the suite's checks
// (the table-wide ones by the batch's rows and key range, as lakewap's
// incremental audit does when every commit on main since is its own), then
// in main's turn look at main's head and merge.
func (f *floorRig) publish(ctx context.Context, ev schemas.WriteComplete, branch string) error {
	l := f.env.Lake
	seal, err := l.Commit(ctx, "lake", branch, "floor seal", nil)
	if err != nil {
		return err
	}
	changes, _, err := l.Differences(ctx, "lake", seal+"~1", seal, "gold/billing_fact/", 1000)
	if err != nil {
		return err
	}
	if len(changes) != 1 {
		return fmt.Errorf("floor: batch %s changed %d files, want 1", ev.BatchID, len(changes))
	}
	local := filepath.Join(f.tmp, "floor-"+ev.BatchID+".parquet")
	file, err := os.Create(local)
	if err != nil {
		return err
	}
	err = l.Download(ctx, "lake", seal, changes[0].Path, file)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	defer os.Remove(local)
	if err != nil {
		return err
	}
	var rows, nulls, dups, negative, unknown int64
	var lo, hi string
	if err := f.db.QueryRowContext(ctx, floorQuery, local).Scan(&rows, &nulls, &dups, &negative, &unknown, &lo, &hi); err != nil {
		return err
	}
	if rows < 1 || nulls != 0 || dups != 0 || negative != 0 {
		return fmt.Errorf("floor: batch %s fails its checks: rows %d nulls %d dups %d negative %d", ev.BatchID, rows, nulls, dups, negative)
	}
	f.turn.Lock()
	head, err := l.Head(ctx, "lake", "main")
	if err == nil && f.lastMerge != "" && head != f.lastMerge {
		err = fmt.Errorf("floor: main moved to %s, not by the floor", head)
	}
	for _, r := range f.ranges {
		if err == nil && lo <= r[1] && r[0] <= hi {
			err = fmt.Errorf("floor: batch %s's keys [%s, %s] overlap a published file's [%s, %s]", ev.BatchID, lo, hi, r[0], r[1])
		}
	}
	var merged string
	if err == nil {
		merged, err = l.Merge(ctx, "lake", seal, "main", "floor merge", map[string]string{pipeline.MetaBatchID: ev.BatchID})
	}
	if err == nil {
		f.lastMerge = merged
		f.ranges = append(f.ranges, [2]string{lo, hi})
	}
	f.turn.Unlock()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	return f.send(ctx, schemas.BatchPublished{EventID: "p-" + ev.BatchID, BatchID: ev.BatchID, Dataset: ev.Dataset, Repository: "lake",
		Branch: branch, TargetRef: "main", CommitID: merged, LandedAt: now, PublishedAt: now,
		Report: schemas.AuditReport{Dataset: ev.Dataset, Ref: seal, Passed: true, Mode: "incremental"}})
}

// BenchmarkFloorSequence is a lower bound for BenchmarkWAPCycle on the same
// rig and driver: the same upstream and writer (BatchLanded produced,
// BranchReady awaited, the object uploaded, WriteComplete produced,
// BatchPublished awaited), answered by a handler that does only what any
// implementation of lakewap's protocol and issue 21's publish must: create
// the branch, seal it, find the batch's files (one diff), read them (one
// DuckDB query: the raw sequence's plus the key range), and in main's turn
// look at main's head and merge. It keeps no state that survives a crash,
// no result events but the two the driver awaits, commits no offsets,
// reads no footer, and checks nothing a reader of main might read
// otherwise: lakewap cannot do less than this, so lakewap/raw cannot
// exceed floor/raw.
func BenchmarkFloorSequence(b *testing.B) {
	rs := newRigs(b)
	rs.floor = true
	floors := map[string]*floorRig{}
	for _, inflight := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			rig := rs.get(b, "", nil)
			f := floors[b.Name()]
			if f == nil {
				db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
				if err != nil {
					b.Fatal(err)
				}
				c, err := kafka.NewClient(rig.env.Stack.KafkaBrokers, kafka.Security{})
				if err != nil {
					b.Fatal(err)
				}
				f = &floorRig{benchRig: rig, db: db, branches: map[string]string{},
					results: c.Writer(kafka.WriterConfig{Topic: rig.env.Cfg.Kafka.ResultsTopic, Attempts: 10})}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- f.run(ctx, rig.env.Cfg.Kafka.InputTopic) }()
				rs.parent.Cleanup(func() {
					cancel()
					if err := <-done; err != nil {
						rs.parent.Error(err)
					}
					_ = f.results.Close()
					c.Close()
					_ = db.Close()
				})
				floors[b.Name()] = f
			}
			rig.prefill(b, b.N*inflight)
			before := f.calls.Load()
			drive(b, inflight, rig.env.Stack, func(ctx context.Context, id string) error {
				// A failed handler answers nothing: the driver would wait
				// for its BatchPublished for ever.
				ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				err := wapBatch(ctx, rig, "floor-"+id)
				if e, _ := f.failed.Load().(error); e != nil {
					return errors.Join(err, e)
				}
				return err
			})
			b.ReportMetric(float64(f.calls.Load()-before)/float64(b.N*inflight), "lakefs-calls/batch")
		})
	}
}
