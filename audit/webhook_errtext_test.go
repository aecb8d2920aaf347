package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// errRunner is a Runner that fails with err.
type errRunner struct{ err error }

func (r errRunner) Run(context.Context, Request) (schemas.AuditReport, error) {
	return schemas.AuditReport{}, r.err
}

// TestPreMergeFailuresTellNothingOfLakeFS: a call that passes the merge
// check (any writer can make a merge lakeFS has in progress) used to be
// answered, when lakeFS or the audit failed, with the error's text: lakeFS's
// internal address, repositories and the object paths a writer chose (an
// audit's "download <path>@ref: ..."), all kept in lakeFS's action log that
// every reader of the repository sees. The answer now says only that the
// audit could not run (and, when retrying helps, that it does); the error
// goes to lakewap's log.
func TestPreMergeFailuresTellNothingOfLakeFS(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, src, merge := hex("1"), hex("2"), hex("3")
	book := mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{
		merge: {Parents: []string{head, src}, Committer: "alice"}}}
	secret := errors.New("download gold/billing/\x1b]8;;https://evil.test\x07click\x1b]8;;\x07.parquet@" + src +
		": GET http://lakefs.internal:8000/api/v1/repositories/secret-repo/refs: 502 Bad Gateway")
	secrets := []string{"lakefs.internal", "secret-repo", "evil.test", "download gold"}
	for _, c := range []struct {
		name string
		opts PreMergeOptions
	}{
		{"the audit fails", PreMergeOptions{Runner: errRunner{secret}}},
		{"the ancestry cannot be read", PreMergeOptions{Runner: passFunc(func() {}),
			Ancestry: ancestryFunc(func(string, string, string) (bool, error) { return false, secret })}},
		{"the diff cannot be read", PreMergeOptions{Runner: passFunc(func() {}),
			Diff: diffFunc(func(string, string, string, string) (bool, error) { return false, secret })}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			opts := c.opts
			opts.Guards, opts.Merges = guardMap{"repo/main": {billingGuard()}}, book
			opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
			h, err := NewPreMergeHandler(opts)
			if err != nil {
				t.Fatal(err)
			}
			status, ans := postHook(t, h, callFor(src, merge))
			body, _ := json.Marshal(ans)
			for _, s := range secrets {
				if strings.Contains(string(body), s) {
					t.Errorf("the answer tells %q: %s", s, body)
				}
			}
			if status != http.StatusInternalServerError || ans.Allowed || ans.Error == "" ||
				!strings.Contains(strings.Join(ans.Summary, " "), "could not run") {
				t.Errorf("status %d, answer %s; want 500 saying the audit could not run", status, body)
			}
			if !strings.Contains(log.String(), "lakefs.internal") || !strings.Contains(log.String(), "billing") {
				t.Errorf("lakewap's log lacks the error:\n%s", log.String())
			}
		})
	}
	// What the caller needs to know stays: audits are busy (try again), or
	// one is still running (its report answers the next call).
	for name, err := range map[string]error{
		"busy":    fmt.Errorf("%w: 4 pre-merge audits are running (http.webhook_concurrency); try again", ErrAuditsBusy),
		"timeout": fmt.Errorf("audit of %s still running: %w", src, context.DeadlineExceeded),
	} {
		h, _ := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Merges: book, Runner: errRunner{err}})
		status, ans := postHook(t, h, callFor(src, merge))
		if status != http.StatusInternalServerError || !strings.Contains(strings.Join(ans.Summary, " "), "try again") {
			t.Errorf("%s: status %d, answer %+v; want 500 saying to try again", name, status, ans)
		}
	}
}
