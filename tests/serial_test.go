package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// Issue 21: checks over the whole table hold on the target right after the
// merge, at any number of batches in flight and with several instances
// publishing to one target; a branch is resumed only when this run made it.

// serialBatch is one batch of a serializability test: its id and the rows
// it writes (billingRows's first id and count).
type serialBatch struct {
	id          string
	first, rows int
}

// landAll lands the batches, writes each one's rows where BranchReady says,
// then completes them all at once, and returns each batch's final event.
func landAll(t *testing.T, env *harness.Env, batches []serialBatch, jitter func() time.Duration) map[string]schemas.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Go(func() { // t.Error, not must: FailNow only from the test's goroutine
			if err := env.Produce(ctx, schemas.BatchLanded{BatchID: b.id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
				Producer: "serial", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}); err != nil {
				t.Errorf("landing %s: %v", b.id, err)
				return
			}
			ev, err := env.Watcher.Await(ctx, b.id, schemas.TypeBranchReady, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
			if err != nil {
				t.Errorf("awaiting %s's branch: %v", b.id, err)
				return
			}
			ready, ok := ev.(schemas.BranchReady)
			if !ok {
				t.Errorf("batch %s ended before its branch: %+v", b.id, ev)
				return
			}
			if err := env.WriteParquet(ctx, ready.Branch, "gold/billing_fact/batch="+b.id+"/part-0.parquet", billingRows(b.first, 0, b.rows, "BIGINT")); err != nil {
				t.Errorf("writing %s: %v", b.id, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, b := range batches { // completed together
		wg.Go(func() {
			if jitter != nil {
				time.Sleep(jitter()) // the interleaving under test, not a wait for a condition
			}
			if err := env.Produce(ctx, schemas.WriteComplete{BatchID: b.id, Dataset: "billing", Write: "billing_fact",
				Paths: []string{"gold/billing_fact/batch=" + b.id + "/part-0.parquet"}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}); err != nil {
				t.Errorf("completing %s: %v", b.id, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	finals := map[string]schemas.Event{}
	for _, b := range batches {
		ev, err := env.Watcher.Await(ctx, b.id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		finals[b.id] = ev
	}
	return finals
}

// tableChecks is the dataset's suite without its batch-scope checks: what
// must hold on the target as a whole.
func tableChecks(cfg *config.Config) audit.Suite {
	s := cfg.Datasets["billing"].Suite
	s.Checks = slices.DeleteFunc(slices.Clone(s.Checks), func(c audit.Check) bool { return c.Scope == "batch" || c.Severity == "warn" })
	return s
}

// tableChecksHold audits ref (a commit on main) with the table checks and
// names the ones that do not hold.
func tableChecksHold(t *testing.T, engine audit.Runner, cfg *config.Config, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := engine.Run(ctx, audit.Request{Dataset: "billing", Suite: tableChecks(cfg), Repository: "lake", Ref: ref, BaseRef: ref, BaseName: "main"})
	must(t, err)
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("on main at %s, %s is %s (observed %s, threshold %s)", ref, c.Name, c.Status, c.Observed, c.Threshold)
		}
	}
}

// collided asserts ev is the abort of a batch whose audit against the
// target as the merge would leave it failed check, naming commit.
func collided(t *testing.T, ev schemas.Event, check, commit string) {
	t.Helper()
	ab, ok := ev.(schemas.BatchAborted)
	if !ok {
		t.Fatalf("batch %s ended with %s: %+v; want aborted", ev.Batch(), ev.EventType(), ev)
	}
	if ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil || !ab.BranchKept {
		t.Errorf("abort of %s: reason %q, report %v, branch kept %v; want audit_failed with its report, branch kept", ab.BatchID, ab.Reason, ab.Report != nil, ab.BranchKept)
	}
	if !strings.Contains(ab.Detail, check) || !strings.Contains(ab.Detail, commit) {
		t.Errorf("abort of %s says %q; want it to name %s and the commit %s it collides with", ab.BatchID, ab.Detail, check, commit)
	}
	if ab.Report != nil {
		var failed []string
		for _, c := range ab.Report.Failed() {
			failed = append(failed, c.Name)
		}
		if !slices.Contains(failed, check) {
			t.Errorf("abort of %s: failed checks %v, want %s among them", ab.BatchID, failed, check)
		}
	}
}

// oneWinner checks that exactly one of the batches a and b published and
// the other collided with its publish commit.
func oneWinner(t *testing.T, finals map[string]schemas.Event, a, b string) {
	t.Helper()
	pa, aPub := finals[a].(schemas.BatchPublished)
	pb, bPub := finals[b].(schemas.BatchPublished)
	switch {
	case aPub && bPub:
		t.Fatalf("both batches with the same keys published (%s, %s): main holds duplicates", pa.CommitID, pb.CommitID)
	case aPub:
		collided(t, finals[b], "billing_id_unique", pa.CommitID)
	case bPub:
		collided(t, finals[a], "billing_id_unique", pb.CommitID)
	default:
		t.Fatalf("neither batch published: %+v, %+v", finals[a], finals[b])
	}
}

// TestSameKeysInFlightOnePublishes: two batches of one dataset carry the
// same keys (an upstream re-send under a new batch id) among 64 batches in
// flight, completed together. Their audits read the same base and pass;
// only one may publish, and the other aborts naming unique and the commit
// it collides with.
func TestSameKeysInFlightOnePublishes(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.Runner.MaxInFlight = 64 })
	run := time.Now().UnixNano()
	var batches []serialBatch
	for i := range 64 {
		batches = append(batches, serialBatch{id: fmt.Sprintf("sk-%d-%02d", run, i), first: 1000 + 100*i, rows: 20})
	}
	// The last two carry the same ids.
	batches[62].first, batches[63].first = 900000, 900000
	finals := landAll(t, e.Env, batches, nil)
	for _, b := range batches[:62] {
		if _, ok := finals[b.id].(schemas.BatchPublished); !ok {
			t.Errorf("batch %s with keys of its own: %+v; want published", b.id, finals[b.id])
		}
	}
	oneWinner(t, finals, batches[62].id, batches[63].id)
	head, err := e.Lake.Head(context.Background(), "lake", "main")
	must(t, err)
	tableChecksHold(t, e.d.Engine(), e.cfg, head)
}

// TestPreMadeBranchOnOldCommitIsRefused: a branch with the run's name made
// beforehand from an older commit of main would have the audit read the
// table as of that commit (blind to rows added since). It is refused as a
// taken name is, and left as it was.
func TestPreMadeBranchOnOldCommitIsRefused(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	if ev := e.runBatch(t, "pm-first", billingRows(0, 0, 50, "BIGINT")); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("first batch: %+v", ev)
	}
	batch := fmt.Sprintf("pm-%d", time.Now().UnixNano())
	branch := schemas.BranchName("billing", batch)
	_, err = e.Lake.EnsureBranch(ctx, "lake", branch, old)
	must(t, err)
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonInvalid || !strings.Contains(ab.Detail, branch) {
		t.Fatalf("batch on a pre-made branch from %s: %+v; want aborted invalid naming the branch", old, ev)
	}
	if head, err := e.Lake.Head(ctx, "lake", branch); err != nil || head != old {
		t.Errorf("the pre-made branch points at %s (err %v); want it left at %s", head, err, old)
	}
}

// TestRandomInterleavingsKeepTableChecks lands rounds of batches whose keys
// overlap at random, completes them in a random order, and after every run
// audits main as that run's publish left it: every table check holds.
// The table is bounded (row_count max), so batches that pass alone but not
// together abort too.
func TestRandomInterleavingsKeepTableChecks(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed>>1))
	maxRows := 300.0
	e := startE2E(t, func(c *config.Config) {
		c.Runner.MaxInFlight = 1 + r.IntN(32)
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "table_bounded", Kind: "row_count", Table: "billing_fact", Max: &maxRows})
		c.Datasets["billing"] = ds
	})
	run := time.Now().UnixNano()
	published, aborted := 0, 0
	for round := range 3 {
		var batches []serialBatch
		for i := range 4 + r.IntN(8) {
			batches = append(batches, serialBatch{id: fmt.Sprintf("ri-%d-%d-%02d", run, round, i), first: 20 * r.IntN(25), rows: 10 + r.IntN(30)})
		}
		finals := landAll(t, e.Env, batches, func() time.Duration { return time.Duration(r.IntN(300)) * time.Millisecond })
		for _, b := range batches {
			switch ev := finals[b.id].(type) {
			case schemas.BatchPublished:
				published++
				tableChecksHold(t, e.d.Engine(), e.cfg, ev.CommitID)
			case schemas.BatchAborted:
				aborted++
				if ev.Reason != schemas.ReasonAuditFailed {
					t.Errorf("batch %s aborted %s (%s); want only audit failures", b.id, ev.Reason, ev.Detail)
				}
			default:
				t.Errorf("batch %s: %+v", b.id, ev)
			}
		}
	}
	head, err := e.Lake.Head(context.Background(), "lake", "main")
	must(t, err)
	tableChecksHold(t, e.d.Engine(), e.cfg, head)
	t.Logf("%d published, %d aborted", published, aborted)
}

// ownership follows one daemon's partitions from its log.
type ownership struct {
	mu    sync.Mutex
	owned map[int]bool
}

func (o *ownership) Enabled(context.Context, slog.Level) bool { return true }
func (o *ownership) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "partition restored" && rec.Message != "partition revoked" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "partition" {
			o.mu.Lock()
			o.owned[int(a.Value.Int64())] = rec.Message == "partition restored"
			o.mu.Unlock()
		}
		return true
	})
	return nil
}
func (o *ownership) WithAttrs([]slog.Attr) slog.Handler { return o }
func (o *ownership) WithGroup(string) slog.Handler      { return o }

func (o *ownership) partitions() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int
	for p, ok := range o.owned {
		if ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// TestTwoInstancesSameKeysOnePublishes: two lakewap instances in one
// group publish to one main, each holding one of two batches with the same
// keys. Both audits pass against the same base, and both instances reach
// their merge at the same time (a barrier at before_merge), past any look
// either can make at main. The pre-merge hook, which lakeFS runs on the
// merge commit it is about to put on main and re-runs when main moved
// meanwhile, is what serializes them: one publishes, the other aborts
// naming unique and the commit it collides with.
func TestTwoInstancesSameKeysOnePublishes(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "two-instances")
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	cfg.HTTP.Listen, cfg.HTTP.WebhookToken = "127.0.0.1:0", "two-instances"
	must(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	barriers := meetBeforeMerge(2)
	owners := []*ownership{{owned: map[int]bool{}}, {owned: map[int]bool{}}}
	var daemons []*daemon.Daemon
	for i := range 2 {
		daemons = append(daemons, runDaemon(t, ctx, cancel, cfg, daemon.Options{Logger: slog.New(owners[i]), Console: io.Discard, Failpoint: barriers[i]}, i))
	}
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	installAction(t, env, "http://"+daemons[0].HTTPAddr()+daemon.PreMergePath)
	waitFor(t, func() bool {
		a, b := owners[0].partitions(), owners[1].partitions()
		return len(a) > 0 && len(b) > 0 && len(a)+len(b) == cfg.Kafka.Partitions
	})
	// One batch on a partition of each instance (the producer's balancer).
	pick := func(owned []int) string {
		for i := 0; ; i++ {
			id := fmt.Sprintf("two-%d-%d", time.Now().UnixNano(), i)
			p := (&kafka.Murmur2Balancer{}).Balance(kafka.Message{Key: []byte(id)}, 0, 1, 2)
			if slices.Contains(owned, p) {
				return id
			}
		}
	}
	a, b := pick(owners[0].partitions()), pick(owners[1].partitions())
	finals := landAll(t, env, []serialBatch{{id: a, first: 700000, rows: 30}, {id: b, first: 700000, rows: 30}}, nil)
	oneWinner(t, finals, a, b)
	head, err := env.Lake.Head(context.Background(), "lake", "main")
	must(t, err)
	tableChecksHold(t, daemons[0].Engine(), cfg, head)
}

// TestPreMergeHookAuditsTheMergeResult: a branch made from main before main
// gained some rows, holding the same ids, passes an audit of its own
// snapshot; merged by hand it would leave duplicates on main. The hook
// audits the merge commit lakeFS is about to put on main and refuses it.
func TestPreMergeHookAuditsTheMergeResult(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-21")
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "hook-secret-21" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)
	rows := billingRows(810000, 0, 40, "BIGINT")
	branchWith(t, e.Env, "manual-old", rows) // made from main before the batch below
	if ev := e.runBatch(t, fmt.Sprintf("hm-%d", time.Now().UnixNano()), rows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch: %+v", ev)
	}
	before, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	_, err = e.Lake.Merge(ctx, "lake", "manual-old", "main", "merge by hand", nil)
	if !status412(err) {
		t.Fatalf("merge of a branch whose ids main gained since: %v; want lakeFS's 412", err)
	}
	if after, err := e.Lake.Head(ctx, "lake", "main"); err != nil || after != before {
		t.Errorf("main moved from %s to %s (err %v)", before, after, err)
	}
	tableChecksHold(t, e.d.Engine(), e.cfg, before)
}

// TestRecheckedMergeIsNotAuditedAgainByTheHook: with lakewap's pre-merge
// action installed, batches A and B branch from the same commit of main
// with keys of their own; A publishes first, so B is rechecked onto A's
// publish before its merge. The hook lakeFS runs on each merge answers
// from lakewap's reports: A's merge from its audit, B's merge commit (which
// combines B with A's publish) from B's passing recheck onto that head. No
// audit runs in the hook (it ran one for B's merge before).
func TestRecheckedMergeIsNotAuditedAgainByTheHook(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-21b")
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "hook-secret-21b" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := "http://" + e.d.HTTPAddr()
	installAction(t, e.Env, base+daemon.PreMergePath)
	run := time.Now().UnixNano()
	a := serialBatch{id: fmt.Sprintf("hr-%d-a", run), first: 700000, rows: 20}
	b := serialBatch{id: fmt.Sprintf("hr-%d-b", run), first: 710000, rows: 20}
	for _, x := range []serialBatch{a, b} {
		landWritten(t, ctx, e.Env, x)
	}
	for _, x := range []serialBatch{a, b} {
		if ev := completeBatch(t, ctx, e.Env, x.id); ev.EventType() != schemas.TypeBatchPublished {
			t.Fatalf("batch %s: %+v", x.id, ev)
		}
	}
	pb, err := e.Lake.Log(ctx, "lake", "main", 1)
	must(t, err)
	if len(pb) != 1 || len(pb[0].Parents) != 2 || pb[0].Metadata[pipeline.MetaBatchID] != b.id {
		t.Fatalf("main's head %+v is not B's publish", pb)
	}
	fams := scrape(t, base+"/metrics")
	if got := value(t, fams, "lakewap_premerge_hooks_total", map[string]string{"outcome": "allow", "via": "audit"}); got != 2 {
		t.Fatalf("hooks allowed by audit: %v, want 2 (the action ran on both merges)", got)
	}
	if got := value(t, fams, "lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"}); got != 0 {
		t.Errorf("the hook audited %v merge(s) again; want none (A's from its audit, B's from its recheck)", got)
	}
}

// landWritten lands batch id and writes its rows (billingRows's first id
// and count) where BranchReady says, without completing it.
func landWritten(t *testing.T, ctx context.Context, env *harness.Env, b serialBatch) {
	t.Helper()
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: b.id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "serial", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := env.Watcher.Await(ctx, b.id, schemas.TypeBranchReady)
	must(t, err)
	must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, "gold/billing_fact/batch="+b.id+"/part-0.parquet", billingRows(b.first, 0, b.rows, "BIGINT")))
}

// completeBatch completes batch id's one write and returns its final event.
func completeBatch(t *testing.T, ctx context.Context, env *harness.Env, id string) schemas.Event {
	t.Helper()
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact",
		Paths: []string{"gold/billing_fact/batch=" + id + "/part-0.parquet"}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := env.Watcher.Await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	return ev
}

// sealOf asserts commit is batch id's seal commit made on a branch from
// from (one parent, lakewap's seal metadata): what was audited.
func sealOf(t *testing.T, c lakefs.Commit, id, from string) {
	t.Helper()
	if len(c.Parents) != 1 || c.Parents[0] != from || c.Metadata[pipeline.MetaSealedBatchID] != id || !strings.HasPrefix(c.Message, "lakewap: seal batch") {
		t.Errorf("commit %s (%q, parents %v, metadata %v) is not the seal of batch %s made from %s", c.ID, c.Message, c.Parents, c.Metadata, id, from)
	}
}

// TestRecheckMergesTheSealedCommit (review finding 4): batches A, B and C
// branch from the same commit of main; B has keys of its own, C A's keys.
// A publishes first, so B and C meet a moved target and are rechecked. B
// passes, and its merge commit's source parent is its sealed commit (the
// commit its audit read), attested against A's publish. C collides with
// A's publish, and its kept branch still ends at its sealed commit: the
// recheck writes nothing to the batch branch.
func TestRecheckMergesTheSealedCommit(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h0, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	run := time.Now().UnixNano()
	a := serialBatch{id: fmt.Sprintf("rs-%d-a", run), first: 500000, rows: 20}
	b := serialBatch{id: fmt.Sprintf("rs-%d-b", run), first: 600000, rows: 20}
	c := serialBatch{id: fmt.Sprintf("rs-%d-c", run), first: 500000, rows: 20}
	for _, x := range []serialBatch{a, b, c} {
		landWritten(t, ctx, e.Env, x)
	}
	pa, ok := completeBatch(t, ctx, e.Env, a.id).(schemas.BatchPublished)
	if !ok {
		t.Fatal("batch A did not publish")
	}

	pb, ok := completeBatch(t, ctx, e.Env, b.id).(schemas.BatchPublished)
	if !ok {
		t.Fatal("batch B, with keys of its own, did not publish")
	}
	mb, err := e.Lake.GetCommit(ctx, "lake", pb.CommitID)
	must(t, err)
	if len(mb.Parents) != 2 || mb.Parents[0] != pa.CommitID {
		t.Fatalf("B's merge commit has parents %v; want A's publish %s and B's sealed commit", mb.Parents, pa.CommitID)
	}
	sealB, err := e.Lake.GetCommit(ctx, "lake", mb.Parents[1])
	must(t, err)
	sealOf(t, sealB, b.id, h0)
	if pb.Report.Ref != sealB.ID {
		t.Errorf("B's report is of %s; want its sealed commit %s", pb.Report.Ref, sealB.ID)
	}
	key, err := e.cfg.AttestationKey()
	must(t, err)
	att, err := audit.Attested(audit.CommitInfo{ID: mb.ID, Parents: mb.Parents, Metadata: mb.Metadata}, "billing", audit.SuiteDigest(e.cfg.Datasets["billing"].Suite), key)
	if err != nil || att.Against != pa.CommitID {
		t.Errorf("B's merge commit: attestation %+v, %v; want one checked against A's publish %s", att, err, pa.CommitID)
	}

	ev := completeBatch(t, ctx, e.Env, c.id)
	collided(t, ev, "billing_id_unique", pa.CommitID)
	ab := ev.(schemas.BatchAborted)
	head, err := e.Lake.GetCommit(ctx, "lake", ab.Branch)
	must(t, err)
	sealOf(t, head, c.id, h0)
	if ab.Report != nil && ab.Report.Ref != head.ID {
		t.Errorf("C's report is of %s; want its sealed commit %s, the kept branch's head", ab.Report.Ref, head.ID)
	}
	if branches, err := e.Lake.ListBranches(ctx, "lake", schemas.BranchName("billing", c.id)+"-probe"); err == nil && len(branches) > 0 {
		t.Errorf("probe branches left: %v", branches)
	}
	now, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	tableChecksHold(t, e.d.Engine(), e.cfg, now)
}

// runDaemon starts a daemon of cfg with o under ctx; the test's clean-up
// ends ctx (cancel) and waits for the daemon (instance i) to stop.
func runDaemon(t *testing.T, ctx context.Context, cancel context.CancelFunc, cfg *config.Config, o daemon.Options, i int) *daemon.Daemon {
	t.Helper()
	d, err := daemon.New(ctx, cfg, o)
	must(t, err)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("daemon %d did not stop", i)
		}
	})
	return d
}

// meetBeforeMerge returns n failpoints, one for each daemon: each holds its
// daemon's first merge until all n have reached theirs (or two minutes have
// passed), so that n publishes race for the target at once.
func meetBeforeMerge(n int) []func(string) {
	var arrived sync.WaitGroup
	arrived.Add(n)
	points := make([]func(string), n)
	for i := range points {
		var once sync.Once
		points[i] = func(name string) {
			if name != "before_merge" {
				return
			}
			once.Do(func() {
				arrived.Done()
				done := make(chan struct{})
				go func() { arrived.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(2 * time.Minute):
				}
			})
		}
	}
	return points
}
