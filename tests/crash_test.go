package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// procStack starts an embedded stack for daemons run as processes: the
// stack, an upstream/writer/watcher env on it, and a config file whose
// datasets wait writeTimeout for writes.
func procStack(t *testing.T, writeTimeout string) (*devstack.Stack, *harness.Env, string) {
	t.Helper()
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	cfgPath := writeCrashConfig(t, stack, cfg, writeTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	t.Cleanup(env.Close)
	return stack, env, cfgPath
}

// daemonProc is one lakewap process.
type daemonProc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

const crashConfig = `lakefs:
  endpoint: %s
  access_key_id: %s
  secret_access_key: ${TEST_LAKEFS_SECRET}
audit: {work_dir: %s, cache_dir: %s, threads: 1, memory_limit: 512MB}
runner: {retry_budget: 2m, shutdown_grace: 5s}
log: {format: text, level: info}
datasets:
  billing:
    repository: %s
    write_timeout: %s
    tables: [{name: billing_fact, path: gold/billing_fact/}]
    checks:
      - {name: billing_id_not_null, kind: not_null, table: billing_fact, columns: [billing_id]}
      - {name: has_rows, kind: row_count, table: billing_fact, min: 1}
`

// procKafkaYAML is the kafka section of a daemon process's config on stack s:
// every topic by its actual name (a real broker has no unsuffixed ones),
// created by the stack, not by the daemon.
func procKafkaYAML(s *devstack.Stack, cfg *config.Config) string {
	k := cfg.Kafka
	return fmt.Sprintf(`kafka:
  brokers: [%s]
  group_id: %s
  create_topics: false
  session_timeout: 6s
  commit_interval: 200ms
  input_topic: %s
  requests_topic: %s
  results_topic: %s
  dead_letter_topic: %s
  changelog_topic: %s
`, strings.Join(s.KafkaBrokers, ", "), k.GroupID, k.InputTopic, k.RequestsTopic, k.ResultsTopic, k.DeadLetterTopic, k.ChangelogTopic)
}

func writeCrashConfig(t *testing.T, s *devstack.Stack, cfg *config.Config, writeTimeout string) string {
	t.Helper()
	dir := t.TempDir()
	y := procKafkaYAML(s, cfg) + fmt.Sprintf(crashConfig,
		s.LakeFSEndpoint, s.AccessKeyID, filepath.Join(dir, "audit"), filepath.Join(dir, "cache"), s.Repository, writeTimeout)
	p := filepath.Join(dir, "lakewap.yaml")
	must(t, os.WriteFile(p, []byte(y), 0o600))
	if _, err := config.ParseIn([]byte(y), func(k string) (string, bool) { return "x", k == "TEST_LAKEFS_SECRET" }, ""); err != nil {
		t.Fatalf("crash config does not load: %v", err)
	}
	return p
}

func startProc(t testing.TB, s *devstack.Stack, cfgPath, failpoint string) *daemonProc {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "lakewap-*.log")
	must(t, err)
	cmd := exec.Command(lakewapBinary(t), "run", "-config", cfgPath)
	cmd.Env = append(os.Environ(), "TEST_LAKEFS_SECRET="+s.SecretAccessKey, "LAKEWAP_FAILPOINT="+failpoint)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	p := &daemonProc{cmd: cmd, log: logf.Name(), exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logf.Close(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("lakewap log (failpoint %q):\n%s", failpoint, tail(string(b), 60))
		}
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *daemonProc) killedBySIGKILL() bool {
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// awaitOrExit waits for a result event of batch, or for the process to die.
func awaitOrExit(ctx context.Context, env *harness.Env, p *daemonProc, batch string, types ...string) (schemas.Event, bool, error) {
	type res struct {
		ev  schemas.Event
		err error
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan res, 1)
	go func() { ev, err := env.Watcher.Await(wctx, batch, types...); ch <- res{ev, err} }()
	select {
	case r := <-ch:
		return r.ev, false, r.err
	case <-p.exited:
		return nil, true, nil
	}
}

// publishCommits counts commits on main that published batch.
func publishCommits(t *testing.T, env *harness.Env, batch string) int {
	t.Helper()
	log, err := env.Lake.Log(context.Background(), env.Stack.Repository, "main", 1000)
	must(t, err)
	n := 0
	for _, c := range log {
		if c.Metadata[pipeline.MetaBatchID] == batch {
			n++
		}
	}
	return n
}

// TestCrashAtEveryStep kills the daemon with SIGKILL at each step of a run
// and restarts it: every batch ends published exactly once (or aborted),
// and its result event is emitted.
func TestCrashAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests run the daemon as a process; skipped with -short")
	}
	cases := []struct {
		failpoint string
		query     string
		want      string
	}{
		{"after_branch", harness.GoodBillingRows, schemas.TypeBatchPublished},
		{"after_write", harness.GoodBillingRows, schemas.TypeBatchPublished},
		{"during_audit", harness.GoodBillingRows, schemas.TypeBatchPublished},
		{"during_audit", harness.BadBillingRows, schemas.TypeBatchAborted},
		{"before_merge", harness.GoodBillingRows, schemas.TypeBatchPublished},
		{"after_merge", harness.GoodBillingRows, schemas.TypeBatchPublished},
		{"before_send", harness.GoodBillingRows, schemas.TypeBatchPublished},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s_%s", tc.failpoint, strings.TrimPrefix(tc.want, "Batch")), func(t *testing.T) {
			stack, env, cfgPath := procStack(t, "5m")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()

			batch := fmt.Sprintf("crash-%d", i)
			first := startProc(t, stack, cfgPath, tc.failpoint)
			current := first
			restart := func() {
				t.Helper()
				if !first.killedBySIGKILL() {
					t.Fatalf("first daemon exited without reaching failpoint %s: %v", tc.failpoint, first.err)
				}
				current = startProc(t, stack, cfgPath, "")
			}
			must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing",
				ExpectedWrites: []string{"billing_fact", "billing_late"}, Producer: "crash-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
			ev, died, err := awaitOrExit(ctx, env, current, batch, schemas.TypeBranchReady)
			must(t, err)
			if died {
				restart()
				ev, err = env.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
				must(t, err)
			}
			branch := ev.(schemas.BranchReady).Branch
			for j, w := range []string{"billing_fact", "billing_late"} {
				path := fmt.Sprintf("gold/billing_fact/batch=%s/part-%d.parquet", batch, j)
				must(t, env.WriteParquet(ctx, branch, path, tc.query+fmt.Sprintf(" WHERE i %% 2 = %d", j)))
				must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: w,
					Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
				if current == first && j == 0 && tc.failpoint == "after_write" {
					// the first write kills the daemon; the second is sent
					// while it is down and must not be lost either.
					select {
					case <-first.exited:
					case <-ctx.Done():
						t.Fatal("daemon did not reach after_write")
					}
				}
			}
			final, died, err := awaitOrExit(ctx, env, current, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
			must(t, err)
			if died {
				restart()
				final, err = env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
				must(t, err)
			}
			if current == first {
				t.Fatalf("failpoint %s was never reached: the run finished in the first process", tc.failpoint)
			}
			if final.EventType() != tc.want {
				t.Fatalf("batch ended with %+v, want %s", final, tc.want)
			}
			n := publishCommits(t, env, batch)
			rows, err := env.CountRows(ctx, "main", "gold/billing_fact/", "")
			must(t, err)
			switch tc.want {
			case schemas.TypeBatchPublished:
				if n != 1 || rows != 1000 {
					t.Errorf("published batch: %d publish commits and %d rows on main, want 1 and 1000", n, rows)
				}
			case schemas.TypeBatchAborted:
				if n != 0 || rows != 0 {
					t.Errorf("aborted batch: %d publish commits and %d rows on main, want none", n, rows)
				}
			}
			// Result events may repeat after a crash, always with the same id.
			ids := map[string]map[string]bool{}
			for _, ev := range env.Watcher.All(batch) {
				if ids[ev.EventType()] == nil {
					ids[ev.EventType()] = map[string]bool{}
				}
				ids[ev.EventType()][ev.ID()] = true
			}
			for typ, set := range ids {
				if len(set) != 1 {
					t.Errorf("%s emitted with %d different event ids, want 1", typ, len(set))
				}
			}
		})
	}
}

// logHas reports whether the process log contains s.
func (p *daemonProc) logHas(s string) bool {
	b, _ := os.ReadFile(p.log)
	return strings.Contains(string(b), s)
}

// TestTwoInstancesTakeOver runs two daemons in one consumer group, kills
// one with SIGKILL while its batches wait for writes, and checks the other
// finishes every batch: written ones are published, and those never written
// time out at their deadline although it was armed by the dead instance.
func TestTwoInstancesTakeOver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon as processes; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "25s")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	a := startProc(t, stack, cfgPath, "")
	b := startProc(t, stack, cfgPath, "")
	waitFor(t, func() bool { return a.logHas("partition restored") && b.logHas("partition restored") })

	const n = 9
	batch := func(i int) string { return fmt.Sprintf("pair-%d", i) }
	for i := range n {
		must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch(i), Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "pair-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	branches := map[int]string{}
	for i := range n {
		ev, err := env.Watcher.Await(ctx, batch(i), schemas.TypeBranchReady)
		must(t, err)
		branches[i] = ev.(schemas.BranchReady).Branch
	}
	if !a.logHas("partition restored") {
		t.Fatal("instance A never owned a partition; the test would prove nothing")
	}
	must(t, a.cmd.Process.Signal(syscall.SIGKILL))
	<-a.exited

	// Every third batch is never written: it must time out on B.
	for i := range n {
		if i%3 == 2 {
			continue
		}
		path := fmt.Sprintf("gold/billing_fact/batch=%s/part-0.parquet", batch(i))
		must(t, env.WriteParquet(ctx, branches[i], path, harness.GoodBillingRows+fmt.Sprintf(" WHERE i %% %d = %d", n, i)))
		must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch(i), Dataset: "billing", Write: "billing_fact",
			OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	for i := range n {
		ev, err := env.Watcher.Await(ctx, batch(i), schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		switch {
		case i%3 == 2:
			if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonWriteTimeout {
				t.Errorf("unwritten %s ended %+v, want write_timeout", batch(i), ev)
			}
		default:
			if ev.EventType() != schemas.TypeBatchPublished {
				t.Errorf("%s ended %+v, want published", batch(i), ev)
			}
			if c := publishCommits(t, env, batch(i)); c != 1 {
				t.Errorf("%s has %d publish commits on main, want 1", batch(i), c)
			}
		}
	}
	select {
	case <-b.exited:
		t.Fatalf("instance B died: %v", b.err)
	default:
	}
}

// TestGracefulShutdownHandsBackWork sends SIGTERM while a batch waits for
// its writes: the daemon exits 0, and a new one finishes the batch.
func TestGracefulShutdownHandsBackWork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon as a process; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "5m")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	first := startProc(t, stack, cfgPath, "")
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: "term-1", Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "term-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := env.Watcher.Await(ctx, "term-1", schemas.TypeBranchReady)
	must(t, err)
	must(t, first.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-first.exited:
	case <-ctx.Done():
		t.Fatal("daemon did not exit after SIGTERM")
	}
	if first.err != nil {
		t.Fatalf("daemon exited with %v after SIGTERM, want status 0", first.err)
	}
	if !first.logHas("stopped") {
		t.Error("daemon log has no 'stopped' line")
	}
	second := startProc(t, stack, cfgPath, "")
	path := "gold/billing_fact/batch=term-1/part-0.parquet"
	must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: "term-1", Dataset: "billing", Write: "billing_fact",
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	final, died, err := awaitOrExit(ctx, env, second, "term-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if died || final.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("after restart: died=%v final=%+v", died, final)
	}
	if n := len(branchReadies(env, "term-1")); n != 1 {
		t.Errorf("%d BranchReady events, want 1 (the restored run must not branch again)", n)
	}
}

func branchReadies(env *harness.Env, batch string) []schemas.Event {
	var out []schemas.Event
	for _, ev := range env.Watcher.All(batch) {
		if ev.EventType() == schemas.TypeBranchReady {
			out = append(out, ev)
		}
	}
	return out
}

// TestAuditThatKillsTheProcessIsAbortedAfterMaxAttempts: a batch whose
// audit takes the process down (the failpoint SIGKILLs it inside the audit
// step, as an out-of-memory kill or a crash inside DuckDB would) is audited
// at most audit.max_attempts (3) times across restarts; the next process
// aborts it audit_crashed, branch kept, instead of dying on it again.
func TestAuditThatKillsTheProcessIsAbortedAfterMaxAttempts(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests run the daemon as a process; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "5m")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const batch = "audit-kills"
	current := startProc(t, stack, cfgPath, "during_audit")
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "crash-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := env.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, env.WriteParquet(ctx, branch, path, harness.GoodBillingRows))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact",
		Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	deaths := 0
	for {
		final, died, err := awaitOrExit(ctx, env, current, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		if !died {
			ab, ok := final.(schemas.BatchAborted)
			if !ok || ab.Reason != schemas.ReasonAuditCrashed || !ab.BranchKept || !strings.Contains(ab.Detail, "3 audit attempt(s) never finished") {
				t.Fatalf("after %d deaths the batch ended with %+v; want aborted audit_crashed, branch kept", deaths, final)
			}
			break
		}
		if !current.killedBySIGKILL() {
			t.Fatalf("daemon exited without reaching the failpoint: %v", current.err)
		}
		if deaths++; deaths > 3 {
			t.Fatalf("the daemon died in the audit of %s %d times: the run is audited again at every restart", batch, deaths)
		}
		current = startProc(t, stack, cfgPath, "during_audit") // the audit would take this one down too
	}
	if deaths != 3 {
		t.Errorf("the batch was aborted after %d deaths, want 3 (audit.max_attempts)", deaths)
	}
	if n := publishCommits(t, env, batch); n != 0 {
		t.Errorf("%d publish commits of the aborted batch, want none", n)
	}
	if _, err := env.Lake.Head(ctx, stack.Repository, branch); err != nil {
		t.Errorf("the branch %s of the aborted batch is gone (%v); it is kept for inspection", branch, err)
	}
}

// TestCrashAfterAttestedMerge (issue 21): the attestation is written with
// the merge, in the merge commit. A daemon SIGKILLed after the merge of a
// batch that lands on a commit lakewap did not attest, before the run
// records the publish, leaves main holding the attested merge; the daemon
// after it finds that merge (no second one), publishes the batch once,
// announces the commit lakewap did not attest once, and the next batch's
// audit trusts the attestation (incremental).
func TestCrashAfterAttestedMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests run the daemon as a process; skipped with -short")
	}
	stack, env, cfgPath := procStack(t, "5m")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	src, err := os.ReadFile(cfgPath)
	must(t, err)
	cfg, err := config.ParseIn(src, func(k string) (string, bool) { return "x", k == "TEST_LAKEFS_SECRET" }, "")
	must(t, err)
	digest := audit.SuiteDigest(cfg.Datasets["billing"].Suite)
	// batch lands, is written and completed; it returns the final event, or
	// died when p exited first.
	batch := func(p *daemonProc, id, query string) (schemas.Event, bool) {
		t.Helper()
		must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: id, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
			Producer: "crash-test", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		ev, err := env.Watcher.Await(ctx, id, schemas.TypeBranchReady)
		must(t, err)
		path := "gold/billing_fact/batch=" + id + "/part-0.parquet"
		must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, query))
		must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: id, Dataset: "billing", Write: "billing_fact",
			Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
		final, died, err := awaitOrExit(ctx, env, p, id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		return final, died
	}

	p0 := startProc(t, stack, cfgPath, "")
	if ev, died := batch(p0, "att-1", harness.GoodBillingRows); died || ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("first batch: %+v (daemon died %v)", ev, died)
	}
	_ = p0.cmd.Process.Signal(syscall.SIGTERM)
	<-p0.exited
	must(t, env.Lake.Upload(ctx, "lake", "main", "notes/readme.txt", strings.NewReader("by hand")))
	direct, err := env.Lake.Commit(ctx, "lake", "main", "a change by hand", nil)
	must(t, err)

	p1 := startProc(t, stack, cfgPath, "after_merge")
	if ev, died := batch(p1, "att-2", rowsFrom("5000")); !died || !p1.killedBySIGKILL() {
		t.Fatalf("the daemon did not die at after_merge: %+v, %v", ev, p1.err)
	}
	merge, err := env.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if merge.Metadata[pipeline.MetaBatchID] != "att-2" || len(merge.Parents) != 2 || merge.Parents[0] != direct {
		t.Fatalf("main's head %s (%v, parents %v) is not att-2's merge onto the direct commit %s", merge.ID, merge.Metadata, merge.Parents, direct)
	}
	if _, err := audit.Attested(audit.CommitInfo{ID: merge.ID, Parents: merge.Parents, Metadata: merge.Metadata}, "billing", digest, nil); err != nil {
		t.Fatalf("the merge left by the killed daemon is not attested: %v", err)
	}

	p2 := startProc(t, stack, cfgPath, "")
	ev, err := env.Watcher.Await(ctx, "att-2", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if pub, ok := ev.(schemas.BatchPublished); !ok || pub.CommitID != merge.ID {
		t.Fatalf("after the restart att-2 ended %+v; want published as the merge %s", ev, merge.ID)
	}
	third, died := batch(p2, "att-3", rowsFrom("9000"))
	if pub, ok := third.(schemas.BatchPublished); died || !ok || pub.Report.Mode != audit.ModeIncremental {
		t.Fatalf("the batch after the restart: %+v; want published after an incremental audit (the attestation taken)", third)
	}
	if n := publishCommits(t, env, "att-2"); n != 1 {
		t.Errorf("%d publish commits of att-2 on main, want 1", n)
	}
	if rows, err := env.CountRows(ctx, "main", "gold/billing_fact/", ""); err != nil || rows != 3000 {
		t.Errorf("main holds %d rows (err %v), want 3000", rows, err)
	}
	// att-2's announcement comes after its BatchPublished: awaited. (That
	// att-3 announces nothing is TestUnattestedCommitIsAnnouncedOnce's.)
	ann, err := env.Watcher.Await(ctx, "att-2", schemas.TypeUnattestedChange)
	must(t, err)
	if c := ann.(schemas.UnattestedChange); c.CommitID != direct || c.PublishedCommitID != merge.ID {
		t.Errorf("announcement %+v; want the direct commit %s under %s", c, direct, merge.ID)
	}
	for _, b := range []string{"att-1", "att-2", "att-3"} {
		ids := map[string]map[string]bool{}
		for _, ev := range env.Watcher.All(b) {
			if ids[ev.EventType()] == nil {
				ids[ev.EventType()] = map[string]bool{}
			}
			ids[ev.EventType()][ev.ID()] = true
		}
		for typ, set := range ids {
			if len(set) != 1 {
				t.Errorf("%s of %s emitted with %d different event ids, want 1", typ, b, len(set))
			}
		}
		if _, ok := ids[schemas.TypeUnattestedChange]; ok && b == "att-1" {
			t.Errorf("att-1 announced %v; the history before lakewap's first publish is not announced", ids[schemas.TypeUnattestedChange])
		}
	}
}
