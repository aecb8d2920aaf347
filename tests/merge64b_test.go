package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Issue 21, review 64b: two instances of one group publishing to one main,
// each holding one batch, completed together and held at before_merge
// until both got there. Together the batches break a table check other
// than unique; each passes alone.

// pairBatch is one batch of a two-instance test: a write of one file at
// path with query's rows, after deleting remove on its branch.
type pairBatch struct {
	dataset, write, path, query string
	remove                      []string
}

// twoInstancesTogether starts two daemons of one group on cfg (mod
// applied), seeds main (seed, committed), installs lakewap's action and
// lands batches[i] on a partition instance i owns, completes them together
// and returns each one's final event by index, the env and a daemon.
func twoInstancesTogether(t *testing.T, token string, mod func(*config.Config), seed func(context.Context, *harness.Env), batches [2]pairBatch) ([2]schemas.Event, [2]string, *harness.Env, *daemon.Daemon, *config.Config) {
	t.Helper()
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", token)
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	cfg.HTTP.Listen, cfg.HTTP.WebhookToken = "127.0.0.1:0", token
	mod(cfg)
	must(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	barriers := meetBeforeMerge(2)
	owners := []*ownership{{owned: map[int]bool{}}, {owned: map[int]bool{}}}
	var daemons []*daemon.Daemon
	for i := range 2 {
		daemons = append(daemons, runDaemon(t, ctx, cancel, cfg, daemon.Options{Logger: slog.New(owners[i]), Console: io.Discard, Failpoint: barriers[i]}, i))
	}
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	seed(ctx, env)
	_, err = env.Lake.Commit(ctx, "lake", "main", "seed", nil)
	must(t, err)
	installAction(t, env, "http://"+daemons[0].HTTPAddr()+daemon.PreMergePath)
	waitFor(t, func() bool {
		a, b := owners[0].partitions(), owners[1].partitions()
		return len(a) > 0 && len(b) > 0 && len(a)+len(b) == cfg.Kafka.Partitions
	})
	pick := func(owned []int) string {
		for i := 0; ; i++ {
			id := fmt.Sprintf("pair-%d-%d", time.Now().UnixNano(), i)
			p := (&kafka.Murmur2Balancer{}).Balance(kafka.Message{Key: []byte(id)}, 0, 1, 2)
			if slices.Contains(owned, p) {
				return id
			}
		}
	}
	ids := [2]string{pick(owners[0].partitions()), pick(owners[1].partitions())}
	lctx, lcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer lcancel()
	api, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
		return nil
	}))
	must(t, err)
	paths := [2]string{}
	for i, b := range batches {
		must(t, env.Produce(lctx, schemas.BatchLanded{BatchID: ids[i], Dataset: b.dataset, ExpectedWrites: []string{b.write},
			Producer: "pair", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		ev, err := env.Watcher.Await(lctx, ids[i], schemas.TypeBranchReady)
		must(t, err)
		branch := ev.(schemas.BranchReady).Branch
		for _, p := range b.remove {
			del, err := api.DeleteObjectWithResponse(lctx, "lake", branch, &apigen.DeleteObjectParams{Path: p})
			must(t, err)
			if del.StatusCode() != http.StatusNoContent {
				t.Fatalf("delete %s on %s: %d %s", p, branch, del.StatusCode(), del.Body)
			}
		}
		paths[i] = fmt.Sprintf(b.path, ids[i])
		must(t, env.WriteParquet(lctx, branch, paths[i], b.query))
	}
	for i, b := range batches { // completed together
		must(t, env.Produce(lctx, schemas.WriteComplete{BatchID: ids[i], Dataset: b.dataset, Write: b.write, Paths: []string{paths[i]},
			OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	var finals [2]schemas.Event
	for i := range ids {
		ev, err := env.Watcher.Await(lctx, ids[i], schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		finals[i] = ev
	}
	return finals, ids, env, daemons[0], cfg
}

// oneOfTwo asserts exactly one of finals published and the other aborted
// audit_failed naming check and the winner's commit.
func oneOfTwo(t *testing.T, finals [2]schemas.Event, check string) {
	t.Helper()
	p0, ok0 := finals[0].(schemas.BatchPublished)
	p1, ok1 := finals[1].(schemas.BatchPublished)
	switch {
	case ok0 && ok1:
		t.Fatalf("both batches published (%s, %s): main fails %s", p0.CommitID, p1.CommitID, check)
	case ok0:
		collided(t, finals[1], check, p0.CommitID)
	case ok1:
		collided(t, finals[0], check, p1.CommitID)
	default:
		t.Fatalf("neither batch published: %+v, %+v", finals[0], finals[1])
	}
}

// TestMerge64bTwoInstancesBreakingARelationshipOnePublishes: main holds
// customers 1..10. Instance A holds an orders batch whose order references
// customer 10; instance B holds a customers batch rewriting the customers
// file without customer 10. Each passes alone (A: customer 10 is on main;
// B: no order on main references 10); both merged, main holds an order of
// a customer it no longer has. Exactly one may publish, the other aborts
// naming orders' cross_table check and the commit it collides with.
func TestMerge64bTwoInstancesBreakingARelationshipOnePublishes(t *testing.T) {
	seedFile := "gold/shop/customers/batch=seed/part-0.parquet"
	finals, _, env, d, cfg := twoInstancesTogether(t, "pair-rel-64b", shopConfig, func(ctx context.Context, env *harness.Env) {
		must(t, env.WriteParquet(ctx, "main", seedFile, customerRows(span(1, 10)...)))
	}, [2]pairBatch{
		{dataset: "orders", write: "orders", path: "gold/shop/orders/batch=%s/part-0.parquet", query: orderRows(1, 10, 3)},
		{dataset: "customers", write: "customers", path: "gold/shop/customers/batch=%s/part-0.parquet", query: customerRows(span(1, 9)...), remove: []string{seedFile}},
	})
	// The check is named as the losing batch's report names it: its own
	// for the orders batch, its neighbor's for the customers batch.
	if _, ordersWon := finals[0].(schemas.BatchPublished); ordersWon {
		oneOfTwo(t, finals, ordersCheck)
	} else {
		oneOfTwo(t, finals, "orders_have_customers")
		return // no order on main: nothing to join
	}
	head, err := env.Lake.Head(context.Background(), "lake", "main")
	must(t, err)
	rep, err := d.Engine().Run(context.Background(), audit.Request{Dataset: "orders", Suite: cfg.Datasets["orders"].Suite, Repository: "lake", Ref: head, BaseRef: head, BaseName: "main"})
	must(t, err)
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("on main at %s, %s is %s (observed %s)", head, c.Name, c.Status, c.Observed)
		}
	}
}

// TestMerge64bTwoInstancesExceedingARowCountOnePublishes: main's
// billing_fact holds 100 rows under a row_count of at most 150; each
// instance holds a batch of 30 new rows. Each passes alone (130), both
// merged main holds 160. Exactly one may publish, the other aborts naming
// the row_count check and the commit it collides with.
func TestMerge64bTwoInstancesExceedingARowCountOnePublishes(t *testing.T) {
	limit := 150.0
	finals, _, env, d, cfg := twoInstancesTogether(t, "pair-rows-64b", func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_at_most_150", Kind: audit.KindRowCount, Table: "billing_fact", Max: &limit})
		c.Datasets["billing"] = ds
	}, func(ctx context.Context, env *harness.Env) {
		must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	}, [2]pairBatch{
		{dataset: "billing", write: "billing_fact", path: "gold/billing_fact/batch=%s/part-0.parquet", query: billingRows(710000, 0, 30, "BIGINT")},
		{dataset: "billing", write: "billing_fact", path: "gold/billing_fact/batch=%s/part-0.parquet", query: billingRows(720000, 0, 30, "BIGINT")},
	})
	oneOfTwo(t, finals, "billing_at_most_150")
	head, err := env.Lake.Head(context.Background(), "lake", "main")
	must(t, err)
	tableChecksHold(t, d.Engine(), cfg, head)
}

// TestMerge64bActionsAbortTellsTheOperatorWhatToDo: a batch from staging,
// which forked from main before lakewap's action was installed on main, is
// refused at its publish (lakeFS would run staging's actions, none, for
// the merge). The abort must say what to do, and doing it must publish:
// it names the action file as missing from the batch's commit, the batch's
// branch to merge main into, the retry to ask for, and the source to fix
// for the batches to come. Merging main into the branch and retrying
// publishes the batch, through main's hook.
func TestMerge64bActionsAbortTellsTheOperatorWhatToDo(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "actions-64b")
	e := startE2E(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "actions-64b"
		ds := c.Datasets["billing"]
		ds.SourceRefs = []string{"main", "staging"}
		c.Datasets["billing"] = ds
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	_, err := e.Lake.Commit(ctx, "lake", "main", "seed", nil)
	must(t, err)
	_, err = e.Lake.EnsureBranch(ctx, "lake", "staging", "main")
	must(t, err)
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)

	id := fmt.Sprintf("act64b-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, SourceRef: "staging",
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=" + id + "/part-0.parquet"
	must(t, e.WriteParquet(ctx, branch, path, billingRows(730000, 0, 3, "BIGINT")))
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact", Paths: []string{path},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err = e.Watcher.Await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonMergeConflict || !ab.BranchKept {
		t.Fatalf("batch from staging lacking main's action: %s %+v; want aborted merge_conflict, branch kept", ev.EventType(), ev)
	}
	for _, want := range []string{
		"_lakefs_actions/lakewap.yaml (missing from the batch's commit",
		"merge main into the batch's branch " + branch,
		"lakewap retry -batch " + id,
		"merge main into staging",
	} {
		if !strings.Contains(ab.Detail, want) {
			t.Errorf("the abort's detail does not say %q:\n%s", want, ab.Detail)
		}
	}

	// Doing what it says publishes the batch.
	api := e.lakeFSAPI(t)
	m, err := api.MergeIntoBranchWithResponse(ctx, "lake", "main", branch, apigen.MergeIntoBranchJSONRequestBody{})
	must(t, err)
	if m.StatusCode() != http.StatusOK {
		t.Fatalf("merging main into %s: %d %s", branch, m.StatusCode(), m.Body)
	}
	if code, out := e.ask(t, "retry", "-batch", id, "-by", "ana"); code != 0 {
		t.Fatalf("retry exited %d:\n%s", code, out)
	}
	if n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "billing_id LIKE 'INV-073%'"); err != nil || n != 3 {
		t.Errorf("main holds %d of the batch's rows after the retry (err %v); want 3", n, err)
	}
}

// TestMerge64bOlderInstancesMergeAfterAHardResetIsRefusedByTheHook: mixed
// versions. An instance older than review 64 ignores a run's audited_onto
// and, after main was hard-reset onto the seal's merge-base, merges the
// seal with no recheck (TestMerge64HardResetAfterAnOntoAuditIsRechecked's
// attack). Its merge is lakewap's own (same committer, its metadata) and
// the seal holds lakewap's action (staging forked after it was installed),
// so lakeFS runs main's hook, which audits the merge on its parents: 105
// rows on the reset 100 under max_growth_pct 3 is refused, and main keeps
// 100 rows. The merge is made here, in the form an older instance makes it,
// between the audit and the new instance's publish.
func TestMerge64bOlderInstancesMergeAfterAHardResetIsRefusedByTheHook(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "older-64b")
	growth := 3.0
	var mu sync.Mutex
	var attack func(pipeline.Run)
	e := startE2EWith(t, func(c *config.Config) {
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "older-64b"
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxGrowthPct: &growth})
		ds.SourceRefs = []string{"main", "staging"}
		c.Datasets["billing"] = ds
	}, daemon.Options{Observe: func(before, after pipeline.Run) {
		if before.State != pipeline.StateAuditing || after.State != pipeline.StatePublishing {
			return
		}
		mu.Lock()
		f := attack
		attack = nil
		mu.Unlock()
		if f != nil {
			f(after) // before the publish step starts
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api := e.lakeFSAPI(t)
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	commitOn(t, ctx, api, "main", "seed")
	fork, err := e.Lake.Head(ctx, "lake", "main")
	must(t, err)
	_, err = e.Lake.EnsureBranch(ctx, "lake", "staging", "main")
	must(t, err)
	must(t, e.WriteParquet(ctx, "main", "gold/billing_fact/batch=u/part-0.parquet", billingRows(100000, 0, 1000, "BIGINT")))
	commitOn(t, ctx, api, "main", "1,000 rows")

	id := fmt.Sprintf("old-%d", time.Now().UnixNano())
	var attackErr, mergeErr error
	var audited pipeline.Run
	attack = func(run pipeline.Run) {
		audited = run
		hr, err := api.HardResetBranchWithResponse(ctx, "lake", "main", &apigen.HardResetBranchParams{Ref: fork})
		if err == nil && hr.StatusCode() != http.StatusNoContent {
			err = fmt.Errorf("hard reset: HTTP %d %s", hr.StatusCode(), hr.Body)
		}
		if attackErr = err; err != nil {
			return
		}
		// The older instance's publish: a look finds the seal's merge-base
		// at main's head, so it merges with no recheck.
		_, mergeErr = e.Lake.Merge(ctx, "lake", run.SealedCommit, "main", "lakewap: publish billing batch "+id,
			map[string]string{pipeline.MetaBatchID: id, pipeline.MetaDataset: "billing", "wap.sealed_commit": run.SealedCommit})
	}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, SourceRef: "staging",
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err = e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	must(t, e.WriteParquet(ctx, schemas.BranchName("billing", id), "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(800000, 0, 5, "BIGINT")))
	ev := completeBatch(t, ctx, e.Env, id)
	mu.Lock()
	happened := attack == nil
	mu.Unlock()
	if !happened {
		t.Fatal("the batch never went from auditing to publishing: the attack did not happen")
	}
	must(t, attackErr)
	if audited.AuditedOnto == "" {
		t.Errorf("the run was not audited onto main's head (audited_onto empty): the scenario needs an Onto audit")
	}
	n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	if mergeErr == nil || n != 100 {
		t.Errorf("an older instance's merge of the Onto-audited seal onto the reset main: err %v, main holds %d rows; want refused by the hook, 100 rows", mergeErr, n)
	}
	if _, ok := ev.(schemas.BatchPublished); ok {
		t.Errorf("the batch was announced published: %+v", ev)
	}
}

// TestMerge64bPartitionMovesBetweenTheRecheckAndTheMerge: instance A
// rechecks a batch onto main's head H and stops at its merge (held at
// before_merge, a paused holder). A loses the partition (it stops: its
// partitions are revoked, the grace ends). main then takes a commit H2
// holding the batch's ids. Instance B restores the run and publishes it:
// its own look finds H2, its recheck onto H2 fails unique, and it aborts
// the batch naming the commit it collides with. A's merge request, sent
// before its pause and reaching lakeFS only now (made here by hand, as A
// makes it: lakewap's committer, its metadata), is judged by main's hook
// on what it leaves and refused: no unaudited merge, no double publish.
// Without H2, B publishes, and A's late merge changes nothing (lakeFS: no
// changes): one merge of the seal on main.
func TestMerge64bPartitionMovesBetweenTheRecheckAndTheMerge(t *testing.T) {
	t.Run("main takes the batch's ids meanwhile", func(t *testing.T) { partitionMoves(t, true) })
	t.Run("main takes nothing more", func(t *testing.T) { partitionMoves(t, false) })
}

func partitionMoves(t *testing.T, collide bool) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "moved-64b")
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	cfg.HTTP.Listen, cfg.HTTP.WebhookToken = "127.0.0.1:0", "moved-64b"
	cfg.Runner.Grace = config.Duration(time.Second)
	must(t, cfg.Validate())

	// The action's URL reaches whichever instance serves hooks now.
	var hookAt atomic.Pointer[string]
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = "http", *hookAt.Load()
	}})
	t.Cleanup(proxy.Close)

	var mu sync.Mutex
	var onPublishing func(pipeline.Run)
	var sealed pipeline.Run
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ownA := &ownership{owned: map[int]bool{}}
	aCtx, aCancel := context.WithCancel(context.Background())
	t.Cleanup(aCancel)
	a, err := daemon.New(aCtx, cfg, daemon.Options{Logger: slog.New(ownA), Console: io.Discard,
		Observe: func(before, after pipeline.Run) {
			if before.State != pipeline.StateAuditing || after.State != pipeline.StatePublishing {
				return
			}
			mu.Lock()
			sealed = after
			f := onPublishing
			onPublishing = nil
			mu.Unlock()
			if f != nil {
				f(after)
			}
		},
		Failpoint: func(name string) {
			if name == "before_merge" {
				once.Do(func() { close(reached); <-release })
			}
		}})
	must(t, err)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(aCtx) }()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	addr := a.HTTPAddr()
	hookAt.Store(&addr)
	env, err := harness.New(context.Background(), stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	installAction(t, env, proxy.URL+daemon.PreMergePath)
	must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	_, err = env.Lake.Commit(ctx, "lake", "main", "seed", nil)
	must(t, err)
	waitFor(t, func() bool { return len(ownA.partitions()) == cfg.Kafka.Partitions })

	// Once audited, main moves (rows of other ids): A's publish rechecks onto H.
	var moveErr error
	onPublishing = func(pipeline.Run) {
		if moveErr = env.WriteParquet(ctx, "main", "gold/billing_fact/batch=other/part-0.parquet", billingRows(100000, 0, 10, "BIGINT")); moveErr == nil {
			_, moveErr = env.Lake.Commit(ctx, "lake", "main", "other rows", nil)
		}
	}
	id := fmt.Sprintf("moved-%d", time.Now().UnixNano())
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	_, err = env.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	must(t, env.WriteParquet(ctx, schemas.BranchName("billing", id), "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(700000, 0, 30, "BIGINT")))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact",
		Paths: []string{"gold/billing_fact/batch=" + id + "/part-0.parquet"}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("A never reached its merge")
	}
	must(t, moveErr)
	// main takes the batch's ids: H2.
	var h2 string
	if collide {
		must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=h2/part-0.parquet", billingRows(700000, 0, 30, "BIGINT")))
		h2, err = env.Lake.Commit(ctx, "lake", "main", "the batch's ids, from elsewhere", nil)
		must(t, err)
	}
	// A loses its partitions (stops); its merge stays held past the grace.
	aCancel()
	waitFor(t, func() bool { return len(ownA.partitions()) == 0 })
	close(release)
	select {
	case <-aDone:
	case <-ctx.Done():
		t.Fatal("A did not stop")
	}

	bCtx, bCancel := context.WithCancel(context.Background())
	b := runDaemon(t, bCtx, bCancel, cfg, daemon.Options{Logger: slog.New(&ownership{owned: map[int]bool{}}), Console: io.Discard}, 1)
	baddr := b.HTTPAddr()
	hookAt.Store(&baddr)
	ev, err := env.Watcher.Await(ctx, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	var published schemas.BatchPublished
	if collide {
		collided(t, ev, "billing_id_unique", h2)
	} else if published, _ = ev.(schemas.BatchPublished); published.CommitID == "" {
		t.Fatalf("B's publish onto a main that took nothing more: %s %+v; want published", ev.EventType(), ev)
	}

	// A's merge request arrives now.
	mu.Lock()
	run := sealed
	mu.Unlock()
	meta := map[string]string{pipeline.MetaBatchID: id, pipeline.MetaDataset: "billing", "wap.sealed_commit": run.SealedCommit}
	if !run.BatchTime.IsZero() {
		meta[pipeline.MetaBatchTime] = run.BatchTime.UTC().Format(time.RFC3339Nano)
	}
	_, err = env.Lake.Merge(ctx, "lake", run.SealedCommit, "main", "lakewap: publish billing batch "+id, meta)
	switch {
	case err == nil:
		t.Errorf("A's late merge of the seal was taken by main (B: %s)", ev.EventType())
	case !collide && !errors.Is(err, pipeline.ErrNoChanges):
		t.Errorf("A's late merge of the seal B published: %v; want lakeFS's no changes", err)
	case collide && (!errors.Is(err, pipeline.ErrHookRefused) || !strings.Contains(err.Error(), "status code: 412")):
		// 412: the hook's audit blocked it (403 would be a call it refused
		// to check, 500 one it could not).
		t.Errorf("A's late merge was refused, but not by the hook's audit (412): %v", err)
	}
	if !collide {
		head, err := env.Lake.Head(ctx, "lake", "main")
		must(t, err)
		if head != published.CommitID {
			t.Errorf("main's head %s after A's late merge; want B's publish %s", head, published.CommitID)
		}
	}
	n, err := env.CountRows(ctx, "main", "gold/billing_fact/", "billing_id >= 'INV-0700000' AND billing_id < 'INV-0700030'")
	must(t, err)
	if n != 30 {
		t.Errorf("main holds the batch's 30 ids in %d rows; want 30 (H2's, or the batch's)", n)
	}
	head, err := env.Lake.Head(ctx, "lake", "main")
	must(t, err)
	tableChecksHold(t, b.Engine(), cfg, head)
}

// TestMerge64bBatchDeletingTheTargetsActionIsRefused: a writer deletes
// main's _lakefs_actions/lakewap.yaml on its batch's branch and writes its
// rows. main does not move, so the publish makes no recheck (and no
// comparison of actions): lakeFS would run the seal's actions, none, and
// the merge would delete main's action. The batch must not publish, and
// main keeps its action: the audit refuses a seal changing a path outside
// its tables (outside_tables), a removal included. Passed on first run.
func TestMerge64bBatchDeletingTheTargetsActionIsRefused(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "del-64b")
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "del-64b" })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)
	id := fmt.Sprintf("del64b-%d", time.Now().UnixNano())
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, id, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	del, err := e.lakeFSAPI(t).DeleteObjectWithResponse(ctx, "lake", branch, &apigen.DeleteObjectParams{Path: "_lakefs_actions/lakewap.yaml"})
	must(t, err)
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete the action on %s: %d %s", branch, del.StatusCode(), del.Body)
	}
	must(t, e.WriteParquet(ctx, branch, "gold/billing_fact/batch="+id+"/part-0.parquet", billingRows(740000, 0, 3, "BIGINT")))
	ev = completeBatch(t, ctx, e.Env, id)
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, "_lakefs_actions/lakewap.yaml") {
		t.Errorf("the batch deleting main's action: %s %+v; want aborted outside_tables naming it", ev.EventType(), ev)
	}
	if acts, err := e.Lake.List(ctx, "lake", "main", "_lakefs_actions/"); err != nil || len(acts) != 1 {
		t.Errorf("main's actions after the batch: %v (err %v); want lakewap.yaml", acts, err)
	}
}

// TestMerge64bTwoInstancesVolumeChangeJudgesEachMergeOnItsHead: main's
// billing_fact holds 100 rows under a volume_change of max_growth_pct 5;
// each instance holds a batch of 4 rows, completed together. Together they
// grow the table 8% over the 100 both were audited against; but
// volume_change bounds what one batch does to the target it lands on, and
// the second merge, rechecked onto the first one's 104 rows, grows it by
// 3.8%: both publish, as they would one after the other on one instance.
// Not a collision: a bound over the table as a whole is a row_count
// (TestMerge64bTwoInstancesExceedingARowCountOnePublishes).
func TestMerge64bTwoInstancesVolumeChangeJudgesEachMergeOnItsHead(t *testing.T) {
	growth := 5.0
	finals, _, env, _, _ := twoInstancesTogether(t, "pair-vol-64b", func(c *config.Config) {
		ds := c.Datasets["billing"]
		ds.Suite.Checks = append(ds.Suite.Checks, audit.Check{Name: "billing_volume", Kind: audit.KindVolumeChange, Table: "billing_fact", MaxGrowthPct: &growth})
		c.Datasets["billing"] = ds
	}, func(ctx context.Context, env *harness.Env) {
		must(t, env.WriteParquet(ctx, "main", "gold/billing_fact/batch=seed/part-0.parquet", billingRows(900000, 0, 100, "BIGINT")))
	}, [2]pairBatch{
		{dataset: "billing", write: "billing_fact", path: "gold/billing_fact/batch=%s/part-0.parquet", query: billingRows(710000, 0, 4, "BIGINT")},
		{dataset: "billing", write: "billing_fact", path: "gold/billing_fact/batch=%s/part-0.parquet", query: billingRows(720000, 0, 4, "BIGINT")},
	})
	for i, ev := range finals {
		if _, ok := ev.(schemas.BatchPublished); !ok {
			t.Errorf("batch %d of 4 rows: %s %+v; want published", i, ev.EventType(), ev)
		}
	}
	n, err := env.CountRows(context.Background(), "main", "gold/billing_fact/", "")
	must(t, err)
	if n != 108 {
		t.Errorf("main holds %d rows, want 108", n)
	}
}
