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
	"strings"
	"time"

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

// TokenHeader carries the shared secret of pre-merge webhook calls.
const TokenHeader = "X-Lakewap-Token"

// PreMergeOptions configure a PreMergeHandler.
type PreMergeOptions struct {
	Guards Guards
	Runner Runner
	// Token, if set, must arrive in the TokenHeader of every call (compared
	// in constant time; 401 otherwise): a hook call makes lakewap run an
	// audit, which nobody else should be able to trigger. Empty serves
	// anyone; lakewap's config refuses an empty token unless it says
	// http.webhook: open.
	Token string
	// Diff, if set, skips the suites of datasets none of whose tables the
	// merge touches: a merge of one dataset's batch is not judged by
	// another dataset's batch-scope checks. Nil runs every guarding suite.
	Diff MergeDiff
	// Timeout bounds how long one request waits for its audits (default
	// 25s, below lakeFS clients' usual 30s call timeout; the action's own
	// timeout must be longer).
	Timeout time.Duration
	Logger  *slog.Logger
	// Observe, if set, is told how each request was decided: decision is
	// allow, block or error; via is audit (the Runner was asked: it may
	// have answered from a cache), unguarded or untouched.
	Observe func(decision, via string)
}

// PreMergeHandler answers lakeFS pre-merge webhooks: it runs the suites of
// the datasets guarding the destination branch on the merge's source commit
// (with the destination as base) and answers 200 to allow the merge, 412
// with the reports to block it. An audit that cannot run answers 500, which
// lakeFS also treats as a refusal: the hook fails closed.
type PreMergeHandler struct{ opts PreMergeOptions }

// NewPreMergeHandler returns the handler; Guards and Runner are required.
func NewPreMergeHandler(opts PreMergeOptions) (*PreMergeHandler, error) {
	if opts.Guards == nil || opts.Runner == nil {
		return nil, errors.New("audit: PreMergeOptions.Guards and Runner are required")
	}
	opts.Timeout = cmp.Or(max(opts.Timeout, 0), 25*time.Second)
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	return &PreMergeHandler{opts}, nil
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
	Summary []string              `json:"summary"`
	Reports []schemas.AuditReport `json:"reports,omitempty"`
	// Skipped lists guarding datasets the merge does not touch.
	Skipped []string `json:"skipped,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// maxHookBody bounds the request body; lakeFS's events are small.
const maxHookBody = 1 << 20

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
	var ev HookEvent
	body, err := io.ReadAll(io.LimitReader(r.Body, maxHookBody+1))
	if err == nil && len(body) > maxHookBody {
		err = errors.New("body larger than 1 MiB")
	}
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err == nil {
		err = ev.validate()
	}
	if err != nil {
		h.answer(w, http.StatusBadRequest, PreMergeAnswer{Summary: []string{"lakewap: not a lakeFS pre-merge event: " + err.Error()},
			Error: err.Error()}, "error", "")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	status, ans, via := h.decide(ctx, ev)
	decision := "allow"
	switch {
	case status >= 500:
		decision = "error"
	case status != http.StatusOK:
		decision = "block"
	}
	h.opts.Logger.Info("pre-merge hook", "repository", ev.RepositoryID, "branch", ev.BranchID, "source_ref", ev.SourceRef,
		"merge_source", ev.MergeSource, "committer", ev.Committer, "decision", decision, "via", via, "status", status)
	h.answer(w, status, ans, decision, via)
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
	if ev.EventType != EventPreMerge {
		return fmt.Errorf("event_type %q: this endpoint answers %s only", ev.EventType, EventPreMerge)
	}
	return nil
}

// decide runs the guarding suites and returns the status, the answer and
// how it was reached.
func (h *PreMergeHandler) decide(ctx context.Context, ev HookEvent) (int, PreMergeAnswer, string) {
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
	var failed []string
	for _, g := range guards {
		if h.opts.Diff != nil {
			touched, err := h.touches(ctx, ev, g.Suite)
			if err != nil {
				return h.failed(ans, what, g.Dataset, err)
			}
			if !touched {
				ans.Skipped = append(ans.Skipped, g.Dataset)
				continue
			}
		}
		rep, err := h.opts.Runner.Run(ctx, Request{Dataset: g.Dataset, Suite: g.Suite, Repository: ev.RepositoryID,
			Ref: ev.SourceRef, BaseRef: ev.BranchID, BatchTime: batchTime})
		if err != nil {
			return h.failed(ans, what, g.Dataset, err)
		}
		ans.Reports = append(ans.Reports, rep)
		if !rep.Passed {
			failed = append(failed, rep.Dataset)
		}
	}
	if len(ans.Reports) == 0 {
		ans.Allowed = true
		ans.Summary = []string{"lakewap allows the " + what + ": it touches no table of " + strings.Join(ans.Skipped, ", ")}
		return http.StatusOK, ans, "untouched"
	}
	status, head := http.StatusOK, "lakewap allows the "+what+": audits passed"
	if ans.Allowed = len(failed) == 0; !ans.Allowed {
		status, head = http.StatusPreconditionFailed, fmt.Sprintf("lakewap blocks the %s: the audit of %s failed", what, strings.Join(failed, ", "))
	}
	ans.Summary = append([]string{head}, reportLines(ans.Reports)...)
	return status, ans, "audit"
}

func (h *PreMergeHandler) touches(ctx context.Context, ev HookEvent, s Suite) (bool, error) {
	for _, t := range s.Tables {
		ok, err := h.opts.Diff.Touches(ctx, ev.RepositoryID, ev.BranchID, ev.SourceRef, t.Path)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func (h *PreMergeHandler) failed(ans PreMergeAnswer, what, dataset string, err error) (int, PreMergeAnswer, string) {
	ans.Error = err.Error()
	ans.Summary = []string{fmt.Sprintf("lakewap blocks the %s: the audit of %s could not run: %v", what, dataset, err)}
	return http.StatusInternalServerError, ans, "audit"
}

func (h *PreMergeHandler) answer(w http.ResponseWriter, status int, ans PreMergeAnswer, decision, via string) {
	if h.opts.Observe != nil {
		h.opts.Observe(decision, via)
	}
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

// reportLines is one line per check that did not pass, or a count when
// all did.
func reportLines(reps []schemas.AuditReport) []string {
	var out []string
	for _, rep := range reps {
		p, f, wn := rep.Counts()
		out = append(out, fmt.Sprintf("%s: %d passed, %d failed, %d warned", rep.Dataset, p, f, wn))
		for _, c := range rep.Checks {
			if c.Status == schemas.StatusPass {
				continue
			}
			line := fmt.Sprintf("  %s %s (%s on %s): observed %s; threshold %s", strings.ToUpper(c.Status), c.Name, c.Kind,
				cmp.Or(c.Table, "-"), cmp.Or(c.Observed, "-"), cmp.Or(c.Threshold, "-"))
			if c.Message != "" {
				line += "; " + c.Message
			}
			out = append(append(out, line), each(c.SampleRows, func(s string) string { return "    " + s })...)
		}
	}
	return out
}
