package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/ingest"
	"github.com/lakewap/lakewap/internal/runstore"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// TestRandomHostileInputThroughRunner drives the real runner (with fakes
// for lakeFS and the notifier, and the real sealed store, internal/runstore,
// over an in-memory changelog), behind the real ingest stage decoding Avro
// with a requests topic and an operator's key, with random event sequences
// that mix good batches with oversized and odd fields, repeated and
// unexpected writes, batch ids shared across datasets, junk datasets,
// undecodable bytes, audits with huge sample rows or infrastructure errors,
// operator requests (retry, revert, cancel) from producers on the input
// topic and unsigned or wrongly signed ones on the requests topic, and
// restarts of the partition after forged, altered, moved and replayed
// records were written to the changelog, after compaction, and with an old
// owner of the partition (a zombie, with the state key) still writing
// sealed records after the handover. It asserts that every stored run
// is within its budget, that every run ends (or waits with a deadline
// inside the horizon), that every input is applied, counted as a
// duplicate, or dead-lettered (a request from anyone but the operator for
// the reason that says so), that a restart restores exactly the records
// lakewap wrote last, that only commits whose audit passed are merged, that
// no batch is published twice and none lost (every merge has its
// BatchPublished and the other way round), and that only the operator's
// requests revert. The inputs are the seed's; the runner's timing is not.
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
			changelog := &changelogLog{}
			reg := prometheus.NewRegistry()
			store := sealedStore(t, changelog, reg)
			restored := &restoreRecorder{Store: store}
			lake := &auditedLake{fakeLake: newFakeLake(), passed: map[string]bool{}}
			f := newRunnerFixtureWith(t, func(c *Config) {
				c.Lake, c.Store = lake, restored
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
					lake.pass(req.Ref)
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
			operatorKey := []byte("alice-signing-key-0123456789")
			stage := ingest.Wrap(ingest.Config{Codec: testCodec, Counted: f.r.CountInput, RequestsTopic: requestsTopic,
				Cluster: "c1", Operators: map[string][]byte{"alice": operatorKey}, Rules: schemas.Rules{
					Known:              func(n string) bool { _, ok := f.cfg.Datasets(n); return ok },
					SourceAllowed:      func(n, ref string) bool { s, _ := f.cfg.Datasets(n); return s.AllowsSource(ref) },
					MaxDeadlineHorizon: horizon,
				}}, f.r)
			// A request comes from the operator (signed, on the requests
			// topic) or from someone else: a producer on the input topic, or
			// on the requests topic without the operator's signature.
			var hostile []string // the dead-letter reason each hostile request must get
			request := func(id string, value []byte) kafka.Message {
				msg := kafka.Message{Topic: requestsTopic, Key: []byte(id), Value: value}
				sign := func(name string, key []byte) {
					msg.Headers = []kafka.Header{{Key: schemas.HeaderOperator, Value: []byte(name)},
						{Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(key, schemas.RequestScope{Cluster: "c1", Topic: requestsTopic}, id, value))}}
				}
				switch rng.IntN(5) {
				case 0:
					msg.Topic = inputTopic
					hostile = append(hostile, ingest.ReasonRequestOnInput)
				case 1:
					hostile = append(hostile, ingest.ReasonUnsigned)
				case 2:
					sign("alice", []byte("mallory-guessed-key-0123456789"))
					hostile = append(hostile, ingest.ReasonUnsigned)
				case 3:
					sign("mallory", operatorKey) // a name with no key configured
					hostile = append(hostile, ingest.ReasonUnsigned)
				default:
					sign("alice", operatorKey)
					return msg
				}
				return msg
			}
			handled, restarts := 0, 0
			// Every operator request that is not a dead letter is answered:
			// by RequestRefused when it changed nothing, else by the outcome
			// of what it started, unless a later operator request took over
			// the run (answered in its place).
			type operatorRequest struct {
				key, id string
				applied bool
			}
			var requests []operatorRequest
			for range 60 + rng.IntN(60) {
				id, ds := pick(ids), pick(datasets)
				var value []byte
				wasHostile := len(hostile)
				msg := func() kafka.Message { return kafka.Message{Topic: inputTopic, Key: []byte(id), Value: value} }
				switch k := rng.IntN(15); {
				case k >= 12:
					// A good batch: it lands here, its one write is this
					// iteration's input, and its id joins the pool.
					id = fmt.Sprint("g", handled)
					ids = append(ids, id)
					ds = datasets[rng.IntN(2)]
					landed := kafka.Message{Topic: inputTopic, Key: []byte(id), Value: avro(t, schemas.BatchLanded{BatchID: id, Dataset: ds,
						ExpectedWrites: []string{"w0"}, OccurredAt: now, Producer: "p"})}
					if err := stage.Handle(context.Background(), landed); err != nil {
						t.Fatalf("a good BatchLanded: %v", err)
					}
					handled++
					value = avro(t, schemas.WriteComplete{BatchID: id, Dataset: ds, Write: "w0", OccurredAt: now})
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
						value = avro(t, ev)
						m := request(id, value)
						msg = func() kafka.Message { return m }
						break
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
					m := request(id, value)
					msg = func() kafka.Message { return m }
				}
				before := count.total("applied")
				err := stage.Handle(context.Background(), msg())
				var poison *consumer.PoisonError
				if err != nil && !errors.As(err, &poison) {
					t.Fatalf("Handle: %v (neither applied nor a dead letter)", err)
				}
				if len(hostile) > wasHostile {
					if want := hostile[len(hostile)-1]; poison == nil || poison.Reason != want || count.total("applied") != before {
						t.Fatalf("a request not from the operator (want dead letter %s) was taken: error %v", want, err)
					}
				} else if req := requestOf(t, value); req != "" && err == nil {
					requests = append(requests, operatorRequest{key: ds + "/" + id, id: req, applied: count.total("applied") > before})
				}
				handled++
				if restarts < 3 && rng.IntN(30) == 0 {
					restarts++
					restart(t, f.r, changelog, restored, rng)
				}
			}
			restart(t, f.r, changelog, restored, rng)
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
			changelog.mu.Lock()
			largest, latest := changelog.largest, maps.Clone(changelog.truth)
			changelog.mu.Unlock()
			if largest > budget+runstore.Overhead {
				t.Errorf("a run record of %d bytes was stored; budget %d and the seal's %d", largest, budget, runstore.Overhead)
			}
			for k := range latest {
				if ds, _, _ := strings.Cut(k, "/"); ds != "billing" && ds != "orders" && !runstore.IsMark(k) {
					t.Errorf("stored run %q of a dataset not in the config", k)
				}
			}
			lake.check(t, f.notes)
			lake.mu.Lock()
			merged := len(lake.merged)
			lake.mu.Unlock()
			t.Logf("%d inputs, %d requests not from the operator, %d restarts, %d records set aside, %d merges", handled, len(hostile), restarts+1,
				setAsideCount(t, reg), merged)
		})
	}
}

// setAsideCount sums lakewap_state_records_set_aside_total.
func setAsideCount(t *testing.T, reg *prometheus.Registry) int {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return int(n)
}

const (
	inputTopic    = "wap.events"
	requestsTopic = "wap.requests"
)

// changelogLog is the changelog topic before compaction: every record in
// order. truth is what lakewap itself (through the store) wrote last for
// each key; inject writes as anyone else with access to the topic.
type changelogLog struct {
	mu      sync.Mutex
	log     []logRecord
	truth   map[string][]byte
	largest int
}

type logRecord struct {
	key   string
	value []byte // nil: a tombstone
	ours  bool   // written by lakewap
}

func (c *changelogLog) Write(_ context.Context, _ int, records ...consumer.ChangelogRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.truth == nil {
		c.truth = map[string][]byte{}
	}
	for _, r := range records {
		c.log = append(c.log, logRecord{r.Key, bytes.Clone(r.Value), true})
		if r.Value == nil {
			delete(c.truth, r.Key)
			continue
		}
		c.truth[r.Key] = bytes.Clone(r.Value)
		c.largest = max(c.largest, len(r.Value))
	}
	return nil
}

func (c *changelogLog) Scan(_ context.Context, _ int, fn func(string, []byte)) error {
	c.mu.Lock()
	log := slices.Clone(c.log)
	c.mu.Unlock()
	for _, r := range log {
		fn(r.key, bytes.Clone(r.value))
	}
	return nil
}

// sealedStore is a store with lakewap's state key over inner.
func sealedStore(t *testing.T, inner runstore.Inner, reg prometheus.Registerer) *runstore.Store {
	t.Helper()
	store, err := runstore.New(runstore.Config{Inner: inner, Key: []byte(strings.Repeat("s", 32)), Registerer: reg,
		Datasets: func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main"}, n == "billing" || n == "orders"
		}})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// compact drops every record but the latest of each key, tombstones too,
// as Kafka's log cleaner does, unless the latest record of a run lakewap
// holds is someone else's: compaction would remove lakewap's own (a
// deletion, which a writer of the topic can always do).
func (c *changelogLog) compact() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := map[string]int{}
	for i, l := range c.log {
		last[l.key] = i
	}
	for k := range c.truth {
		if !c.log[last[k]].ours {
			return false
		}
	}
	var kept []logRecord
	for i, l := range c.log {
		if last[l.key] == i && l.value != nil {
			kept = append(kept, l)
		}
	}
	c.log = kept
	return true
}

// zombieLog is the changelog as an old owner of the partition writes it:
// not lakewap's records as far as the test is concerned (they are not the
// truth), though sealed with its key.
type zombieLog struct{ *changelogLog }

func (z zombieLog) Write(_ context.Context, _ int, records ...consumer.ChangelogRecord) error {
	for _, r := range records {
		z.inject(r.Key, r.Value)
	}
	return nil
}

func (c *changelogLog) inject(k string, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, logRecord{key: k, value: bytes.Clone(v)})
}

// restoreRecorder keeps what the store restored last.
type restoreRecorder struct {
	*runstore.Store
	mu   sync.Mutex
	last map[string][]byte
}

func (r *restoreRecorder) Load(ctx context.Context, p int) (map[string][]byte, error) {
	m, err := r.Store.Load(ctx, p)
	r.mu.Lock()
	r.last = maps.Clone(m)
	r.mu.Unlock()
	return m, err
}

var sealOf = regexp.MustCompile(`(,"wap_epoch":[0-9]+(,"wap_owner":"[0-9a-f]{16}")?)?,"wap_seq":[0-9]+,"wap_seal":"[0-9a-f]{64}"\}$`)

// restart revokes the partition, writes one to four hostile records to the
// changelog (a forged run publishing an unaudited commit, an altered
// record, one moved to another key, an older record of lakewap's written
// again), assigns the partition again, and asserts that the store restored
// exactly what lakewap had written last for each key.
func restart(t *testing.T, r *Runner, c *changelogLog, rec *restoreRecorder, rng *rand.Rand) {
	t.Helper()
	r.Revoked(0)
	c.mu.Lock()
	want := map[string][]byte{}
	for k, v := range c.truth {
		if !runstore.IsMark(k) {
			want[k] = sealOf.ReplaceAll(v, []byte("}"))
		}
	}
	var ours []logRecord
	for _, l := range c.log {
		if l.ours && l.value != nil {
			ours = append(ours, l)
		}
	}
	c.mu.Unlock()
	now := time.Now().UTC()
	for n := 1 + rng.IntN(4); n > 0; n-- {
		switch k := rng.IntN(4); {
		case k == 0 || len(ours) == 0:
			id := fmt.Sprint("forged-", rng.IntN(1000))
			run := Run{BatchID: id, Dataset: "billing", Repository: "lake", Branch: schemas.BranchName("billing", id), Source: "main",
				Target: "main", State: StatePublishing, SealedCommit: "unaudited-" + id, PublishSince: now, StateSince: now, UpdatedAt: now,
				Report: &schemas.AuditReport{Dataset: "billing", Passed: true}}
			b, err := json.Marshal(run)
			if err != nil {
				t.Fatal(err)
			}
			c.inject(RunKey("billing", id), b)
		case k == 1:
			l := ours[rng.IntN(len(ours))]
			c.inject(l.key, regexp.MustCompile(`"state":"[a-z_]+"`).ReplaceAll(l.value, []byte(`"state":"publishing"`)))
		case k == 2:
			l, other := ours[rng.IntN(len(ours))], ours[rng.IntN(len(ours))]
			if l.key != other.key {
				c.inject(other.key, l.value)
			}
		default:
			l := ours[rng.IntN(len(ours))]
			c.inject(l.key, l.value) // lakewap's own, maybe long superseded or deleted since
		}
	}
	if rng.IntN(3) == 0 {
		c.compact()
	}
	// An old owner that loaded the partition before this assignment and
	// writes on after it, sealed with the state key: a forged run
	// publishing an unaudited commit, and older records of lakewap's
	// written again as its own. The next restart sets them aside.
	var zombie *runstore.Store
	if rng.IntN(2) == 0 {
		zombie = sealedStore(t, zombieLog{c}, nil)
		if _, err := zombie.Load(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Assigned(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	for n := rng.IntN(4); zombie != nil && n >= 0; n-- {
		var key string
		var value []byte
		if len(ours) > 0 && rng.IntN(2) == 0 {
			if l := ours[rng.IntN(len(ours))]; !runstore.IsMark(l.key) {
				key, value = l.key, sealOf.ReplaceAll(l.value, []byte("}"))
			}
		}
		if key == "" {
			id := fmt.Sprint("zombie-", rng.IntN(1000))
			key = RunKey("billing", id)
			var err error
			value, err = json.Marshal(Run{BatchID: id, Dataset: "billing", Repository: "lake", Branch: schemas.BranchName("billing", id),
				Source: "main", Target: "main", State: StatePublishing, SealedCommit: "unaudited-" + id, PublishSince: now, StateSince: now,
				UpdatedAt: now, Report: &schemas.AuditReport{Dataset: "billing", Passed: true}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := zombie.Put(context.Background(), 0, key, value); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	got := rec.last
	rec.mu.Unlock()
	if len(got) != len(want) {
		t.Errorf("restart restored %d runs, lakewap had %d", len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Errorf("restart restored %s as %.300s, lakewap last wrote %.300s", k, got[k], v)
		}
	}
}

// auditedLake is the fake lake that knows which sealed commits passed
// their audit: merging any other is publishing unaudited data.
type auditedLake struct {
	*fakeLake
	pmu      sync.Mutex
	passed   map[string]bool
	unaudits []string
}

func (l *auditedLake) pass(ref string) {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	l.passed[ref] = true
}

func (l *auditedLake) Merge(ctx context.Context, repo, source, dest, msg string, meta map[string]string) (string, error) {
	l.pmu.Lock()
	if !l.passed[source] {
		l.unaudits = append(l.unaudits, source)
	}
	l.pmu.Unlock()
	return l.fakeLake.Merge(ctx, repo, source, dest, msg, meta)
}

// check asserts what reached the target: only audited commits, no batch
// merged or announced published twice, every merge announced and every
// announcement merged, and reverts asked for by the operator only.
func (l *auditedLake) check(t *testing.T, notes *recordingNotifier) {
	t.Helper()
	l.pmu.Lock()
	for _, s := range l.unaudits {
		t.Errorf("merged %s, which passed no audit", s)
	}
	l.pmu.Unlock()
	l.mu.Lock()
	merges := map[string]int{}
	for _, c := range l.log {
		switch {
		case c.Metadata[MetaRevertedBatchID] != "":
			if by := c.Metadata[MetaRevertedBy]; by != "alice" {
				t.Errorf("revert %s of batch %s asked for by %q, not the operator", c.ID, c.Metadata[MetaRevertedBatchID], by)
			}
		case len(c.Parents) > 1:
			merges[c.Metadata[MetaDataset]+"/"+c.Metadata[MetaBatchID]]++
		}
	}
	l.mu.Unlock()
	notes.mu.Lock()
	published := map[string]map[string]bool{} // run key -> event ids
	for _, ev := range notes.events {
		if p, ok := ev.(schemas.BatchPublished); ok {
			k := p.Dataset + "/" + p.BatchID
			if published[k] == nil {
				published[k] = map[string]bool{}
			}
			published[k][p.EventID] = true
		}
	}
	notes.mu.Unlock()
	for k, n := range merges {
		if n > 1 {
			t.Errorf("%s merged %d times", k, n)
		}
		if len(published[k]) == 0 {
			t.Errorf("%s merged and never announced published: lost", k)
		}
	}
	for k, ids := range published {
		if len(ids) > 1 {
			t.Errorf("%s announced published %d times (event ids %v)", k, len(ids), slices.Collect(maps.Keys(ids)))
		}
		if merges[k] == 0 {
			t.Errorf("%s announced published, never merged", k)
		}
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
