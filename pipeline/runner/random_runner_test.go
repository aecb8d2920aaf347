package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

// TestRandomHostileInputThroughRunner drives the real runner (with fakes
// for lakeFS, the store and the notifier), behind the real ingest stage
// decoding Avro, with random event sequences that
// mix good batches with oversized and odd fields, repeated and unexpected
// writes, batch ids shared across datasets, junk datasets, undecodable
// bytes and audits with huge sample rows or infrastructure errors. It
// asserts that every stored run is within its budget, that every run ends
// (or waits with a deadline inside the horizon), and that every input is
// applied, counted as a duplicate, or dead-lettered.
func TestRandomHostileInputThroughRunner(t *testing.T) {
	const budget = 24 << 10
	horizon := time.Hour
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			var count inputCounter
			var audits auditSeq
			f := newRunnerFixtureWith(t, func(c *Config) {
				c.Datasets = func(n string) (DatasetSpec, bool) {
					return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: 300 * time.Millisecond}, n == "billing" || n == "orders"
				}
				c.Policy = policy(func(p *Policy) {
					p.MinBackoff, p.MaxBackoff, p.RetryBudget = time.Millisecond, 5*time.Millisecond, 50*time.Millisecond
					p.MaxRunBytes, p.MaxOpenRuns, p.MaxLagWait, p.LagRecheck = budget, 8, time.Second, 10*time.Millisecond
				})
				c.Auditor = auditFunc(func(_ context.Context, req AuditRequest) (schemas.AuditReport, error) {
					r := audits.next(req.Ref)
					switch r % 5 {
					case 0:
						return schemas.AuditReport{}, fmt.Errorf("%w: Out of Memory Error", ErrTransient)
					case 1, 2:
						return failingReport(1+r%7, 1<<(6+r%12)), nil // up to 128 KB per sample row
					}
					return report(true), nil
				})
			})
			count.r = f.r
			// The notifier's channel is drained in the background.
			go func() {
				for range f.notes.ch {
				}
			}()
			now := time.Now().UTC().Truncate(time.Millisecond)
			datasets := []string{"billing", "orders", "nope", "or\xffders", strings.Repeat("d", 300)}
			ids := []string{"b1", "b2", "b3", "shared", "b 4", strings.Repeat("x", 201)}
			pick := func(s []string) string { return s[rng.IntN(len(s))] }
			words := func(n int, prefix string) []string {
				out := make([]string, n)
				for i := range out {
					out[i] = fmt.Sprintf("%s%d", prefix, i)
				}
				return out
			}
			handled := 0
			// Every operator request that is not a dead letter is answered:
			// by RequestRefused when it changed nothing, else by the outcome
			// of what it started, unless a later operator request took over
			// the run (answered in its place).
			type request struct {
				key, id string
				applied bool
			}
			var requests []request
			for range 60 + rng.IntN(60) {
				id, ds := pick(ids), pick(datasets)
				var value []byte
				switch k := rng.IntN(12); {
				case k == 0:
					value = []byte("garbage \xff")
				case k < 4:
					ev := schemas.BatchLanded{BatchID: id, Dataset: ds, ExpectedWrites: words(1+rng.IntN(3), "w"), OccurredAt: now,
						Producer: strings.Repeat("p", rng.IntN(1500))}
					switch rng.IntN(6) {
					case 0:
						d := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
						ev.WriteDeadline = &d
					case 1:
						ev.ExpectedWrites = words(rng.IntN(400), "long_write_name_"+strings.Repeat("n", 60))
					case 2:
						ev.Attributes = map[string]string{"k": strings.Repeat("v", rng.IntN(2000))}
					case 3:
						d := now.Add(time.Duration(rng.IntN(int(2 * horizon))))
						ev.WriteDeadline = &d
					}
					value = avro(t, ev)
				case k < 10:
					w := fmt.Sprintf("w%d", rng.IntN(5)) // w3, w4: never expected
					if rng.IntN(5) == 0 {
						w = strings.Repeat("u", 1+rng.IntN(200))
					}
					value = avro(t, schemas.WriteComplete{BatchID: id, Dataset: ds, Write: w, OccurredAt: now,
						Paths: words(rng.IntN(3), strings.Repeat("p", rng.IntN(2000))+"/")})
				case k == 10:
					ev := schemas.BatchCancelled{BatchID: id, Dataset: ds, OccurredAt: now, Reason: strings.Repeat("r", rng.IntN(1200))}
					if rng.IntN(2) == 0 { // an operator's cancel, answered even when refused
						ev.RequestID, ev.RequestedBy = fmt.Sprint("c", handled), strings.Repeat("o", rng.IntN(1100))
					}
					value = avro(t, ev)
				default:
					// Operator requests, some malformed (a reason or a
					// requester too long, no request id).
					req, by := fmt.Sprint("q", handled), strings.Repeat("o", rng.IntN(1100))
					if rng.IntN(8) == 0 {
						req = ""
					}
					if rng.IntN(2) == 0 {
						value = avro(t, schemas.RetryRequested{RequestID: req, BatchID: id, Dataset: ds, RequestedBy: by, OccurredAt: now})
					} else {
						value = avro(t, schemas.RevertRequested{RequestID: req, BatchID: id, Dataset: ds, RequestedBy: by, OccurredAt: now,
							Reason: strings.Repeat("r", rng.IntN(1200))})
					}
				}
				before := count.total("applied")
				err := f.ingest(t, id, value, horizon)
				if err != nil && !errors.As(err, new(*consumer.PoisonError)) {
					t.Fatalf("Handle: %v (neither applied nor a dead letter)", err)
				}
				if req := requestOf(t, value); req != "" && err == nil {
					requests = append(requests, request{key: ds + "/" + id, id: req, applied: count.total("applied") > before})
				}
				handled++
			}
			var applied, dups, dead int
			for _, typ := range []string{"BatchLanded", "WriteComplete", "BatchCancelled", "RetryRequested", "RevertRequested"} {
				applied += count.get(typ + "/applied")
				dups += count.get(typ + "/duplicate")
				dead += count.get(typ + "/dead_letter")
			}
			dead += count.get("undecodable/dead_letter")
			if applied+dups+dead != handled {
				t.Errorf("%d inputs: %d applied, %d duplicates, %d dead letters", handled, applied, dups, dead)
			}
			// Every run ends, or waits with a deadline inside the horizon.
			deadline := time.Now().Add(30 * time.Second)
			for {
				open := 0
				for _, r := range f.r.Runs() {
					waiting := r.State == StateAwaitingWrites || r.State == StatePending
					switch {
					case waiting && r.Deadline.After(time.Now().Add(horizon)):
						t.Fatalf("run %s/%s (%s) waits until %s, past the horizon", r.Dataset, r.BatchID, r.State, r.Deadline)
					case waiting && r.Deadline.After(time.Now().Add(5*time.Second)) && len(r.Outbox) == 0:
						// waits for a deadline inside the horizon: allowed
					case !r.State.Terminal() || len(r.Outbox) > 0:
						open++
					}
				}
				if open == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, r := range f.r.Runs() {
						t.Logf("%s/%s %s outbox %d deadline %s", r.Dataset, r.BatchID, r.State, len(r.Outbox), r.Deadline)
					}
					t.Fatalf("%d runs did not end", open)
				}
				time.Sleep(10 * time.Millisecond)
			}
			answered := func(batch, req string) bool {
				f.notes.mu.Lock()
				defer f.notes.mu.Unlock()
				for i, ev := range f.notes.events {
					if ev.Batch() == batch && f.notes.requests[i] == req {
						return true
					}
				}
				return false
			}
			for i, q := range requests {
				superseded := false
				for _, later := range requests[i+1:] {
					superseded = superseded || q.applied && later.applied && later.key == q.key
				}
				_, batch, _ := strings.Cut(q.key, "/")
				for deadline := time.Now().Add(10 * time.Second); !superseded && !answered(batch, q.id); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("operator request %s of %s (applied %v) was never answered", q.id, q.key, q.applied)
					}
				}
			}
			f.store.mu.Lock()
			defer f.store.mu.Unlock()
			if f.store.largest > budget {
				t.Errorf("a run record of %d bytes was stored; budget %d", f.store.largest, budget)
			}
			for _, part := range f.store.data {
				for k := range part {
					if ds, _, _ := strings.Cut(k, "/"); ds != "billing" && ds != "orders" {
						t.Errorf("stored run %q of a dataset not in the config", k)
					}
				}
			}
		})
	}
}

// auditSeq numbers the audits, to vary their outcomes.
type auditSeq struct {
	mu sync.Mutex
	n  int
}

func (s *auditSeq) next(string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n * 7
}

// requestOf returns the request id of an operator request in value.
func requestOf(t *testing.T, value []byte) string {
	ev, err := testCodec.Decode(context.Background(), value)
	if err != nil {
		return ""
	}
	switch e := ev.(type) {
	case schemas.RetryRequested:
		return e.RequestID
	case schemas.RevertRequested:
		return e.RequestID
	case schemas.BatchCancelled:
		return e.RequestID
	}
	return ""
}
