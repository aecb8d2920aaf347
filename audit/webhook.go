package audit

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/loglimit"
	"github.com/lakewap/lakewap/schemas"
)

// HookEvent is the part of the JSON body lakeFS posts to a webhook hook
// (lakeFS v1.84.0, pkg/actions.EventInfo) that lakewap reads. For
// pre-merge, BranchID is the destination, SourceRef the commit id being
// merged and MergeSource the ref the user named (a branch, tag or commit).
// The event's commit_metadata, which anyone merging can set, is not read:
// it never decides anything here.
type HookEvent struct {
	EventType    string `json:"event_type"`
	EventTime    string `json:"event_time"`
	RepositoryID string `json:"repository_id"`
	BranchID     string `json:"branch_id,omitempty"`
	SourceRef    string `json:"source_ref,omitempty"`
	Committer    string `json:"committer,omitempty"`
	MergeSource  string `json:"merge_source,omitempty"`
	// CommitID is, for pre-merge, the merge commit lakeFS has written but
	// not yet put on BranchID: what the call is checked against.
	CommitID string `json:"commit_id,omitempty"`
}

// EventPreMerge is the lakeFS event type the pre-merge handler answers.
const EventPreMerge = "pre-merge"

// Guard is a dataset whose suite guards merges into a branch.
type Guard struct {
	Dataset string
	Suite   Suite
}

// Guards says which datasets guard merges into branch of repo (the
// datasets that publish there).
type Guards interface {
	Guarding(repo, branch string) []Guard
}

// Runner runs one audit. *Engine is one; lakewap's daemon puts a cache of
// passing reports by commit id in front of it.
type Runner interface {
	Run(ctx context.Context, req Request) (schemas.AuditReport, error)
}

// MergeDiff says whether merging ref into base adds, changes or removes
// anything under prefix.
type MergeDiff interface {
	Touches(ctx context.Context, repo, base, ref, prefix string) (bool, error)
}

// Merges is what the pre-merge handler asks lakeFS to check that a call
// names a merge in progress: lakeFS writes the merge commit (parents: the
// destination's head, then the source commit) before it calls the hook, and
// moves the destination to it only after the hook allowed it.
type Merges interface {
	// Commit returns commit id of repo; ErrUnknownCommit when lakeFS has none.
	Commit(ctx context.Context, repo, id string) (MergeCommit, error)
	// Head returns the commit branch of repo points at; ErrUnknownCommit
	// when lakeFS has no such branch.
	Head(ctx context.Context, repo, branch string) (string, error)
}

// MergeCommit is what the handler reads of the commit a call names.
type MergeCommit struct {
	Parents []string
	// Committer is who lakeFS says made the merge (the authenticated user's
	// email, else name): not something the caller can choose.
	Committer string
	// Metadata is the merge commit's metadata. Anyone merging writes their
	// own; only that of a merge whose Committer is lakewap's is read (its
	// batch time, schemas.MetaBatchTime).
	Metadata map[string]string
}

var (
	// ErrUnknownCommit is a Merges' answer for a commit lakeFS does not have.
	ErrUnknownCommit = errors.New("no such commit")
	// ErrAuditsBusy is a Runner's answer when every audit slot is taken:
	// the caller may try again.
	ErrAuditsBusy = errors.New("every pre-merge audit slot is taken")
)

// Ancestry says whether branch's head is in ref's history: merging ref
// into branch then leaves exactly ref's content.
type Ancestry interface {
	Holds(ctx context.Context, repo, ref, branch string) (bool, error)
}

// TokenHeader carries the shared secret of pre-merge webhook calls.
const TokenHeader = "X-Lakewap-Token"

// PreMergeOptions configure a PreMergeHandler.
type PreMergeOptions struct {
	Guards Guards
	Runner Runner
	// Token, if set, must arrive in the TokenHeader of every call (compared
	// in constant time; 401 otherwise). lakeFS fills {{ ENV.LAKEFSACTION_* }}
	// in every action file, a writer's on its own branch included, so the
	// token keeps out only those who cannot write an action file: Merges is
	// what a call is checked against.
	Token string
	// Merges, if set, is asked about every call: it must name a merge in
	// progress (commit_id a merge commit lakeFS wrote, whose parents are the
	// destination's current head and source_ref), else 403 and no audit.
	// Nil checks nothing (tests and http.webhook: open).
	Merges Merges
	// OwnCommitter is lakewap's own lakeFS user as lakeFS names it in
	// commits: a verified merge it made is lakewap's publish, audited (on a
	// cache miss) with the capacity reserved for those.
	OwnCommitter string
	// Diff, if set, skips the suites of datasets none of whose tables the
	// merge touches: a merge of one dataset's batch is not judged by
	// another dataset's batch-scope checks. Nil runs every guarding suite.
	Diff MergeDiff
	// Ancestry, if set, makes the hook audit what the merge leaves on the
	// destination: the source when the destination's head is in its
	// history, else the merge commit of the event (the source's changes
	// combined with commits the source has not seen). lakeFS v1.84.0 runs
	// the hook inside the update of the destination, conditional on its
	// head not having moved, and runs it again when it has, so the verdict
	// is about the commit that lands. Nil audits the source.
	Ancestry Ancestry
	// Timeout bounds how long one request waits for its audits (default
	// 25s, below lakeFS clients' usual 30s call timeout; the action's own
	// timeout must be longer).
	Timeout time.Duration
	Logger  *slog.Logger
	// Registerer, if set, gets the handler's metrics (metrics.go): how each
	// request was decided, allow, block or error, and via what: audit (the
	// Runner was asked: it may have answered from a cache), unguarded or
	// untouched.
	Registerer prometheus.Registerer
}

// PreMergeHandler answers lakeFS pre-merge webhooks: it runs the suites of
// the datasets guarding the destination branch on the merge's source commit
// (with the destination as base) and answers 200 to allow the merge, 412
// with the reports to block it. An audit that cannot run answers 500, which
// lakeFS also treats as a refusal: the hook fails closed.
type PreMergeHandler struct {
	opts    PreMergeOptions
	metrics *hookMetrics
	reads   chan struct{} // bodies being read (maxHookReads)
	logs    loglimit.Limit
	now     func() time.Time
}

// NewPreMergeHandler returns the handler; Guards and Runner are required.
func NewPreMergeHandler(opts PreMergeOptions) (*PreMergeHandler, error) {
	if opts.Guards == nil || opts.Runner == nil {
		return nil, errors.New("audit: PreMergeOptions.Guards and Runner are required")
	}
	opts.Timeout = cmp.Or(max(opts.Timeout, 0), 25*time.Second)
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	m, err := newHookMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &PreMergeHandler{opts: opts, metrics: m, reads: make(chan struct{}, maxHookReads), now: time.Now}, nil
}

// maxHookLogs bounds the lines of one kind the handler logs a minute (a
// call's decision by how it was reached, a refusal, a failure): every
// writer has the token, and each call that reached the checks, a refused
// one too, logged a line or two of up to 2 KiB, as fast as callers sent
// them (TestHookCallLogsAreBounded).
// lakewap_premerge_hooks_total counts every call; the next line let
// through says how many of its kind were not.
const maxHookLogs = 10

// log logs msg at level unless maxHookLogs lines of kind were logged in
// the last minute.
func (h *PreMergeHandler) log(level slog.Level, kind, msg string, args ...any) {
	ok, missed := h.logs.Allow(kind, maxHookLogs, h.now())
	if !ok {
		return
	}
	if missed > 0 {
		args = append(args, "not_logged", missed)
	}
	h.opts.Logger.Log(context.Background(), level, msg, args...)
}

// PreMergeAnswer is the JSON body of every answer. lakeFS keeps it in the
// hook's run log (lakectl actions runs describe, or the UI's Actions tab);
// the merge error itself only says that the hook failed.
type PreMergeAnswer struct {
	Allowed    bool   `json:"allowed"`
	Repository string `json:"repository,omitempty"`
	Branch     string `json:"branch,omitempty"`
	SourceRef  string `json:"source_ref,omitempty"`
	// Summary is the human-readable verdict, one line per entry.
	Summary []string `json:"summary"`
	// Verdicts are the outcome of each dataset's audit: which checks did
	// not pass, never what the data holds (no observed values, messages or
	// sample rows), since the caller may be anyone who can write an action
	// file. `lakewap audit` gives an operator the whole report.
	Verdicts []Verdict `json:"verdicts,omitempty"`
	// Skipped lists guarding datasets the merge does not touch.
	Skipped []string `json:"skipped,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Verdict is one dataset's audit as a hook answer tells it.
type Verdict struct {
	Dataset string `json:"dataset"`
	Passed  bool   `json:"passed"`
	// Counts of checks passed, failed (error severity, or could not run)
	// and warned.
	PassedChecks int `json:"passed_checks"`
	FailedChecks int `json:"failed_checks"`
	WarnedChecks int `json:"warned_checks"`
	// Checks are the checks that did not pass.
	Checks []CheckVerdict `json:"checks,omitempty"`
}

// CheckVerdict names a check that did not pass and how it ended.
type CheckVerdict struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Table  string `json:"table,omitempty"`
	Status string `json:"status"`
}

// verdictOf keeps of rep what a hook answer may carry.
func verdictOf(rep schemas.AuditReport) Verdict {
	v := Verdict{Dataset: rep.Dataset, Passed: rep.Passed}
	v.PassedChecks, v.FailedChecks, v.WarnedChecks = rep.Counts()
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			v.Checks = append(v.Checks, CheckVerdict{Name: c.Name, Kind: c.Kind, Table: c.Table, Status: c.Status})
		}
	}
	return v
}

// maxHookBody bounds the request body; lakeFS's events are small.
const maxHookBody = 1 << 20

// maxHookReads bounds the bodies read and decoded at once (2.1 MiB
// allocated for a body of maxHookBody): a call that finds no room within the
// handler's Timeout is answered 503 without its body being read. Every
// writer has the token; before, callers sending bodies at once made the
// daemon hold one per connection they opened.
const maxHookReads = 16

// maxFreeHookBody is the part of a body read before a read slot is taken:
// a body no longer than it (lakeFS's events, lakewap's own publishes' with
// their metadata, are a few KiB) needs none. Slots are held as long as the
// hook's timeout by whoever sends a body slowly, and callers queued for
// them keep them taken (every writer has the token): lakewap's own
// publishes waited behind them and were answered 503. What is read without
// a slot is bounded by the server's connection limit (512 connections of
// 64 KiB: 32 MiB).
const maxFreeHookBody = 64 << 10

func (h *PreMergeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(h.opts.Token)) != 1 {
		http.Error(w, "missing or wrong "+TokenHeader+" header", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.answer(w, http.StatusMethodNotAllowed, PreMergeAnswer{Summary: []string{"lakewap: POST a lakeFS hook event"}}, "error", "")
		return
	}
	// One deadline for the wait to be read, the checks and the audits.
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	// The body too is read by then: a caller sending it slowly would
	// otherwise hold a read slot for as long as the server lets the
	// connection be read, whatever the timeout (review 14).
	// A body read whole gives the connection its deadline back; one that
	// was not leaves it, so the connection is closed after the answer.
	rc := http.NewResponseController(w)
	dl, _ := ctx.Deadline()
	limited := rc.SetReadDeadline(dl) == nil
	ev, busy, err := h.read(ctx, r)
	if limited && !busy && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	} else if limited {
		w.Header().Set("Connection", "close")
	}
	if busy {
		w.Header().Set("Retry-After", "1")
		h.answer(w, http.StatusServiceUnavailable, PreMergeAnswer{Summary: []string{"lakewap: too many hook calls being read at once; try again"},
			Error: "busy"}, "error", "")
		return
	}
	if err != nil {
		h.answer(w, http.StatusBadRequest, PreMergeAnswer{Summary: []string{"lakewap: not a lakeFS pre-merge event: " + err.Error()},
			Error: err.Error()}, "error", "")
		return
	}
	own, head, status, ans := h.verify(ctx, ev)
	via := "unverified"
	if status == 0 {
		status, ans, via = h.decide(ctx, ev, own, head)
	}
	decision := "allow"
	switch {
	case status >= 500:
		decision = "error"
	case status != http.StatusOK:
		decision = "block"
	}
	kind := "call " + decision + " " + via
	if own.ok {
		kind += " own" // lakewap's merges are not lost among other callers'
	}
	h.log(slog.LevelInfo, kind, "pre-merge hook", "repository", ev.RepositoryID, "branch", ev.BranchID, "source_ref", ev.SourceRef,
		"merge_source", ev.MergeSource, "committer", ev.Committer, "decision", decision, "via", via, "status", status)
	h.answer(w, status, ans, decision, via)
}

// read reads and checks the call's event: one of up to maxFreeHookBody
// bytes at once, a longer one at most maxHookReads at once; busy when no
// room was found for a longer one before ctx ended.
func (h *PreMergeHandler) read(ctx context.Context, r *http.Request) (ev HookEvent, busy bool, err error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFreeHookBody+1))
	if err == nil && len(body) > maxFreeHookBody {
		select {
		case h.reads <- struct{}{}:
			defer func() { <-h.reads }()
		case <-ctx.Done():
			return ev, true, nil
		}
		var rest []byte
		rest, err = io.ReadAll(io.LimitReader(r.Body, maxHookBody+1-int64(len(body))))
		body = append(body, rest...)
	}
	if err == nil && len(body) > maxHookBody {
		err = errors.New("body larger than 1 MiB")
	}
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err == nil {
		err = ev.validate()
	}
	return ev, false, err
}

func (ev HookEvent) validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{{"event_type", ev.EventType}, {"repository_id", ev.RepositoryID},
		{"branch_id", ev.BranchID}, {"source_ref", ev.SourceRef}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	// Each field is logged and may be sent back in the answer (and the
	// names go to lakeFS): bounded, so a caller with the token every action
	// file has cannot make either as large as the body.
	for _, f := range []struct {
		name, v string
		max     int
	}{{"event_type", ev.EventType, maxHookRef}, {"event_time", ev.EventTime, 64}, {"repository_id", ev.RepositoryID, maxHookRef},
		{"branch_id", ev.BranchID, maxHookRef}, {"source_ref", ev.SourceRef, maxHookRef}, {"merge_source", ev.MergeSource, maxHookRef},
		{"commit_id", ev.CommitID, maxHookRef}, {"committer", ev.Committer, maxHookCommitter}} {
		if len(f.v) > f.max {
			return fmt.Errorf("%s of %d bytes: at most %d", f.name, len(f.v), f.max)
		}
	}
	if ev.EventType != EventPreMerge {
		return fmt.Errorf("event_type %q: this endpoint answers %s only", ev.EventType, EventPreMerge)
	}
	return nil
}

// Bounds of a hook event's fields: names of repositories, branches and
// refs (lakeFS's own are shorter), and the committer (a user id).
const (
	maxHookRef       = 256
	maxHookCommitter = 1024
)

// verify asks lakeFS whether ev names a merge in progress: commit_id is a
// merge commit whose parents are branch_id's current head and source_ref
// (lakeFS writes it before calling the hook and moves the branch only
// after). It returns status 0 when the call may be decided, whether the
// merge is lakewap's own (made by OwnCommitter) and the destination's head
// (branch_id when Merges is nil); otherwise the answer.
func (h *PreMergeHandler) verify(ctx context.Context, ev HookEvent) (own ownMerge, head string, status int, ans PreMergeAnswer) {
	own, status, ans = h.verifyMerge(ctx, ev)
	return own, cmp.Or(own.head, ev.BranchID), status, ans
}

func (h *PreMergeHandler) verifyMerge(ctx context.Context, ev HookEvent) (own ownMerge, status int, ans PreMergeAnswer) {
	if h.opts.Merges == nil {
		return own, 0, ans
	}
	ans = PreMergeAnswer{Repository: ev.RepositoryID, Branch: ev.BranchID, SourceRef: ev.SourceRef}
	// What lakeFS answered stays in lakewap's log: the caller may be any
	// writer, and lakewap's key may read repositories the caller may not,
	// so a refusal says the same whatever lakeFS holds (no head commit, no
	// "no such commit" apart from "not that merge", no lakeFS error text).
	const notInProgress = "commit_id is not a merge of source_ref onto the head of branch_id that lakeFS has in progress"
	refuse := func(detail string) (ownMerge, int, PreMergeAnswer) {
		h.log(slog.LevelInfo, "refused", "pre-merge hook call refused", "repository", ev.RepositoryID, "branch", ev.BranchID,
			"source_ref", ev.SourceRef, "commit_id", ev.CommitID, "detail", detail)
		ans.Error = notInProgress
		ans.Summary = []string{"lakewap refuses this call: " + notInProgress}
		return own, http.StatusForbidden, ans
	}
	failed := func(err error) (ownMerge, int, PreMergeAnswer) {
		h.log(slog.LevelWarn, "not checked", "pre-merge hook call not checked: lakeFS did not answer", "repository", ev.RepositoryID,
			"branch", ev.BranchID, "commit_id", ev.CommitID, "err", err)
		ans.Error = "lakeFS could not be asked about the merge (details in the lakewap log)"
		ans.Summary = []string{"lakewap cannot check the call with lakeFS (details in the lakewap log)"}
		return own, http.StatusInternalServerError, ans
	}
	if !IsCommitID(ev.CommitID) || !IsCommitID(ev.SourceRef) {
		ans.Error = "commit_id and source_ref must be the commit ids lakeFS sends for a merge in progress"
		ans.Summary = []string{"lakewap refuses this call: " + ans.Error}
		return own, http.StatusForbidden, ans
	}
	c, err := h.opts.Merges.Commit(ctx, ev.RepositoryID, ev.CommitID)
	if errors.Is(err, ErrUnknownCommit) {
		return refuse("lakeFS has no such commit: " + err.Error())
	}
	if err != nil {
		return failed(err)
	}
	head, err := h.opts.Merges.Head(ctx, ev.RepositoryID, ev.BranchID)
	if errors.Is(err, ErrUnknownCommit) {
		return refuse("lakeFS has no such branch: " + err.Error())
	}
	if err != nil {
		return failed(err)
	}
	// A merge commit has the destination's head first and the source second.
	// A one-parent commit (a squash merge) ties nothing to the source: any
	// commit made from the head, lakewap's own seal commit among them, has
	// that shape, so it is refused; squash merges onto a guarded target are
	// not supported.
	if len(c.Parents) != 2 || c.Parents[0] != head || c.Parents[1] != ev.SourceRef {
		return refuse(fmt.Sprintf("parents %v, the head of the branch %s", c.Parents, head))
	}
	own.head = head
	if h.opts.OwnCommitter == "" || c.Committer != h.opts.OwnCommitter {
		return own, 0, ans
	}
	own.ok, own.parents = true, [2]string{head, ev.SourceRef}
	if c.Metadata[schemas.MetaRevertedBatchID] != "" {
		own.revert = true // a revert, judged as the runner judges it: no dataset is its own
	} else {
		own.dataset = c.Metadata[schemas.MetaDataset]
	}
	if t, err := time.Parse(time.RFC3339Nano, c.Metadata[schemas.MetaBatchTime]); err == nil {
		own.batchTime = t
	}
	return own, 0, ans
}

// ownMerge is what verify found of a merge lakewap itself makes (ok): the
// batch time its publish recorded on the merge commit, which the run's
// audit judged freshness against (zero when it recorded none). It is read
// in O(1) from the commit verify fetched anyway, survives a restart, and
// is trusted because lakeFS, not the caller, names the committer.
type ownMerge struct {
	ok        bool
	batchTime time.Time
	parents   [2]string // the target's head and the merged commit
	head      string    // the destination's head verify read, for any merge
	// dataset is the one whose batch the merge publishes (its commit's
	// metadata, which lakewap alone writes on its merges).
	dataset string
	// revert: the merge is lakewap's revert of a publish (its audited
	// scratch revert commit merged onto the target), not a publish.
	revert bool
}

// decide runs the guarding suites and returns the status, the answer and
// how it was reached. own is a verified merge lakewap itself makes; head
// is the destination as the merge found it.
func (h *PreMergeHandler) decide(ctx context.Context, ev HookEvent, own ownMerge, head string) (int, PreMergeAnswer, string) {
	ans := PreMergeAnswer{Repository: ev.RepositoryID, Branch: ev.BranchID, SourceRef: ev.SourceRef}
	what := fmt.Sprintf("merge of %s into %s/%s", mergeName(ev), ev.RepositoryID, ev.BranchID)
	guards := h.opts.Guards.Guarding(ev.RepositoryID, ev.BranchID)
	if len(guards) == 0 {
		ans.Allowed = true
		ans.Summary = []string{"lakewap allows the " + what + ": no dataset publishes to " + ev.BranchID}
		return http.StatusOK, ans, "unguarded"
	}
	batchTime := time.Now()
	if t, err := time.Parse(time.RFC3339, ev.EventTime); err == nil {
		batchTime = t
	}
	if !own.batchTime.IsZero() {
		batchTime = own.batchTime // judged as the run's audit was
	}
	ref, leaves, err := h.mergeResult(ctx, ev)
	if err != nil {
		return h.failed(ans, what, guards[0].Dataset, err)
	}
	if ref != ev.SourceRef {
		what += " (audited as the merge commit " + ref + ", which combines it with commits it has not seen)"
	}
	var failed []string
	excused := 0
	for _, g := range guards {
		if h.opts.Diff != nil {
			touched, err := h.touches(ctx, ev.RepositoryID, ev.BranchID, ref, g.Suite)
			if err != nil {
				return h.failed(ans, what, g.Dataset, err)
			}
			if !touched {
				ans.Skipped = append(ans.Skipped, g.Dataset)
				continue
			}
		}
		req := Request{Dataset: g.Dataset, Suite: g.Suite, Repository: ev.RepositoryID,
			Ref: ref, BaseRef: ev.BranchID, BatchTime: batchTime, Own: own.ok}
		if own.ok && leaves {
			// What lakewap's own merge leaves, known: lakewap's recheck of
			// the source onto the head answers (a revert's audit onto a
			// head that did not move, whose scratch commit the merge
			// leaves, among them).
			req.MergeOf = own.parents
		}
		rep, err := h.opts.Runner.Run(ctx, req)
		// lakewap's own publish is judged by its dataset's checks as its
		// recheck judges it: none is excused for failing on the head
		// already (the runner excuses only other datasets' checks). A
		// publish whose merge lands on another head than it was rechecked
		// onto (another instance's revert or publish came between) would
		// otherwise pass where the recheck onto that head refuses it
		// (review 48, TestTwoInstancesRevertBetweenTheLookAndTheMerge).
		if err == nil && !rep.Passed && !(own.ok && own.dataset == g.Dataset) {
			as := blameAs{revert: own.revert}
			if !own.ok {
				as.sole, err = h.soleTable(ctx, ev, ref, g, guards)
			}
			var n int
			if err == nil {
				rep, n, err = h.blame(ctx, req, head, rep, as)
			}
			excused += n
		}
		if err != nil {
			return h.failed(ans, what, g.Dataset, err)
		}
		ans.Verdicts = append(ans.Verdicts, verdictOf(rep))
		if !rep.Passed {
			failed = append(failed, rep.Dataset)
		}
	}
	if len(ans.Verdicts) == 0 {
		ans.Allowed = true
		ans.Summary = []string{"lakewap allows the " + what + ": it touches no table of " + strings.Join(ans.Skipped, ", ")}
		return http.StatusOK, ans, "untouched"
	}
	status, verdict := http.StatusOK, "lakewap allows the "+what+": audits passed"
	if ans.Allowed = len(failed) == 0; !ans.Allowed {
		status, verdict = http.StatusPreconditionFailed, fmt.Sprintf("lakewap blocks the %s: the audit of %s failed", what, strings.Join(failed, ", "))
	}
	if excused > 0 {
		verdict += fmt.Sprintf(" (%d checks that fail on %s already, before this merge, warn: not this merge's doing)", excused, ev.BranchID)
	}
	ans.Summary = append([]string{verdict}, verdictLines(ans.Verdicts)...)
	return status, ans, "audit"
}

// blame is rep, the failing audit of req (the merge), as the runner judges
// a neighbor's checks (neighbors.go): a check that fails with the merge
// and failed on the destination's head already (audited full, against
// itself) is not the merge's doing, unless the merge makes it worse
// (excused), and is reported warn, saying so; one that passed there, or
// judges the merge's files alone (scope: batch: the head has no batch, and
// a check failing on no rows fails there always), fails it. A person's fix merge is not refused for what main already
// fails, and lakewap's own publish of a batch its runner let through is
// not refused by its own hook; a merge that makes a passing check fail is.
//
// A revert of lakewap's (as.revert) adds no files: its batch-scoped checks
// judge no rows, as on the head, and are compared with the head's too. A
// person's merge changing a table only req's dataset publishes (as.sole)
// is not excused for a query that cannot run for a table with no file
// yet: lakewap's own publish of that dataset's rows would not be.
func (h *PreMergeHandler) blame(ctx context.Context, req Request, head string, rep schemas.AuditReport, as blameAs) (schemas.AuditReport, int, error) {
	var before map[string]schemas.CheckResult
	n := 0
	for i, c := range rep.Checks {
		if c.Status != schemas.StatusFail && c.Status != schemas.StatusError || batchScoped(req.Suite, c.Name) && !as.revert {
			continue
		}
		if as.sole != "" && unborn(c) {
			rep.Checks[i].Message = joinMessage(fmt.Sprintf("it cannot run (a table it reads has no file yet), so it judges none of this merge's rows of %s, "+
				"which dataset %s alone publishes: lakewap's own publish of them would be refused too", as.sole, req.Dataset), c.Message)
			continue
		}
		if before == nil {
			base, err := h.opts.Runner.Run(ctx, Request{Dataset: req.Dataset, Suite: req.Suite, Repository: req.Repository,
				Ref: head, BaseRef: head, BaseName: req.BaseRef, BatchTime: req.BatchTime, Own: req.Own, Full: true})
			if err != nil {
				return rep, 0, fmt.Errorf("checks of dataset %s on %s, before the merge: %w", req.Dataset, req.BaseRef, err)
			}
			before = resultsByName(base)
		}
		b := before[c.Name]
		changed, err := h.checkChanged(ctx, req, c.Name)
		if err != nil {
			return rep, 0, err
		}
		own := req
		own.MergeOf, own.Full = [2]string{}, false
		ownRows := ""
		if changed { // a merge leaving the tables a check reads leaves its rows as they were
			if ownRows, err = ownRowsFail(ctx, h.opts.Runner, own, req.Suite, c, b, head); err != nil {
				return rep, 0, err
			}
		}
		if failing(b.Status) && (!excused(c, b, changed, req.Suite) || ownRows != "") {
			rep.Checks[i].Message = joinMessage(fmt.Sprintf("fails on %s at %s already, and %s", req.BaseRef, short(head), cmp.Or(worse(c, b, changed, req.Suite), ownRows)), c.Message)
			continue
		}
		if failing(b.Status) {
			n++
			rep.Checks[i].Status = schemas.StatusWarn
			rep.Checks[i].Message = joinMessage(fmt.Sprintf("fails on %s at %s already, before this merge: not this merge's doing, "+
				"it does not hold the merge back", req.BaseRef, short(head)), c.Message)
			h.log(slog.LevelWarn, "excused", "a check fails on the destination already; the merge is not held back for it", "repository", req.Repository,
				"branch", req.BaseRef, "dataset", req.Dataset, "check", c.Name, "ref", req.Ref, "head", head)
		}
	}
	rep.Passed = len(rep.Failed()) == 0
	return rep, n, nil
}

// blameAs is how blame judges a merge: lakewap's revert, or a person's
// merge changing sole, a table path only the judged dataset lists.
type blameAs struct {
	revert bool
	sole   string
}

// soleTable is a table path of g that no other guard lists and that the
// merge (ev, leaving ref) changes, or "" (none, or no Diff to tell).
func (h *PreMergeHandler) soleTable(ctx context.Context, ev HookEvent, ref string, g Guard, guards []Guard) (string, error) {
	if h.opts.Diff == nil {
		return "", nil
	}
	for _, t := range g.Suite.Tables {
		shared := slices.ContainsFunc(guards, func(o Guard) bool {
			return o.Dataset != g.Dataset && slices.ContainsFunc(o.Suite.Tables, func(ot Table) bool { return ot.Path == t.Path })
		})
		if shared {
			continue
		}
		ok, err := h.opts.Diff.Touches(ctx, ev.RepositoryID, ev.BranchID, ref, t.Path)
		if err != nil {
			return "", err
		}
		if ok {
			return t.Path, nil
		}
	}
	return "", nil
}

// checkChanged says whether the merge (req) changes a table of req's suite
// that its check named name reads (checkTables) on the destination (see
// touches); without a diff it is taken to.
func (h *PreMergeHandler) checkChanged(ctx context.Context, req Request, name string) (bool, error) {
	for _, t := range checkTables(req.Suite, name) {
		if h.opts.Diff == nil {
			return true, nil
		}
		ok, err := h.opts.Diff.Touches(ctx, req.Repository, req.BaseRef, req.Ref, t.Path)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// mergeResult is the ref that holds what the merge leaves on the
// destination (see PreMergeOptions.Ancestry); leaves says that was
// established (the merge commit, or a source Ancestry says holds the
// destination's head), not assumed (a source, without Ancestry or the
// merge commit to tell).
func (h *PreMergeHandler) mergeResult(ctx context.Context, ev HookEvent) (ref string, leaves bool, err error) {
	if h.opts.Ancestry == nil || ev.CommitID == "" {
		return ev.SourceRef, false, nil
	}
	holds, err := h.opts.Ancestry.Holds(ctx, ev.RepositoryID, ev.SourceRef, ev.BranchID)
	if err != nil {
		return ev.SourceRef, false, err
	}
	if holds {
		return ev.SourceRef, true, nil
	}
	return ev.CommitID, true, nil
}

// touches reports whether the merge changes main under one of s's tables:
// whether ref, what the merge leaves on branch (mergeResult), differs from
// branch's head there. Its diff against its merge-base with branch is
// exactly that: the merge commit's first parent is the head, and a source
// holding the head has it for merge-base. The source's own changes since
// its merge-base are not: lakeFS v1.84.0's merge can drop a path the
// target added under a table the source never touched (its handleAll
// compares an entry with the merge-base's next one whatever its name,
// audit/mergehazard.go), and the suite guarding that table was skipped.
func (h *PreMergeHandler) touches(ctx context.Context, repo, branch, ref string, s Suite) (bool, error) {
	for _, t := range s.Tables {
		ok, err := h.opts.Diff.Touches(ctx, repo, branch, ref, t.Path)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// failed answers a call whose audit could not run. The error stays in
// lakewap's log: it can name lakeFS's address, repositories the caller may
// not read and object paths a writer chose, and the answer lands in
// lakeFS's action log, which every reader of the repository sees. The
// caller is told only whether trying again may help.
func (h *PreMergeHandler) failed(ans PreMergeAnswer, what, dataset string, err error) (int, PreMergeAnswer, string) {
	h.log(slog.LevelWarn, "not run", "pre-merge audit could not run", "repository", ans.Repository, "branch", ans.Branch,
		"source_ref", ans.SourceRef, "dataset", dataset, "err", err)
	why := "details in the lakewap log"
	switch {
	case errors.Is(err, ErrAuditsBusy):
		why = "every pre-merge audit slot is taken (http.webhook_concurrency); try again"
	case errors.Is(err, context.DeadlineExceeded):
		why = "still running at the hook's timeout (http.webhook_audit_timeout); it goes on, and its report answers the next call: try again"
	}
	ans.Error = "the audit of " + dataset + " could not run: " + why
	ans.Summary = []string{fmt.Sprintf("lakewap blocks the %s: the audit of %s could not run: %s", what, dataset, why)}
	return http.StatusInternalServerError, ans, "audit"
}

func (h *PreMergeHandler) answer(w http.ResponseWriter, status int, ans PreMergeAnswer, decision, via string) {
	h.metrics.decided(decision, via)
	if ans.Summary == nil {
		ans.Summary = []string{}
	}
	b, err := json.MarshalIndent(ans, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// mergeName names the source as the user did, with the commit it resolved to.
func mergeName(ev HookEvent) string {
	if ev.MergeSource != "" && ev.MergeSource != ev.SourceRef {
		return fmt.Sprintf("%s (%s)", ev.MergeSource, shortRef(ev.SourceRef))
	}
	return shortRef(ev.SourceRef)
}

var longHex = regexp.MustCompile(`^[0-9a-f]{13,}$`)

func shortRef(ref string) string {
	if longHex.MatchString(ref) {
		return ref[:12]
	}
	return ref
}

// verdictLines is one line per dataset and one per check that did not pass.
func verdictLines(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s: %d passed, %d failed, %d warned", v.Dataset, v.PassedChecks, v.FailedChecks, v.WarnedChecks))
		for _, c := range v.Checks {
			out = append(out, fmt.Sprintf("  %s %s (%s on %s)", strings.ToUpper(c.Status), c.Name, c.Kind, cmp.Or(c.Table, "-")))
		}
	}
	return out
}
