package audit

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestPreMergeRefusalsTellNothingOfLakeFS: every writer has the hook's
// token, and lakewap's lakeFS key may read repositories a writer may not.
// A refused call used to be told the head commit of the branch it named
// ("not a merge of ... onto the head of main (1111111111111111)"), whether
// lakeFS has the commit it named (two refusals that differed), and lakeFS's
// own error text: a writer could read the heads of any repository's
// branches, and probe for commits, through lakewap. Each refusal now says
// the same, and the details go to lakewap's log.
func TestPreMergeRefusalsTellNothingOfLakeFS(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, src, stray := hex("1"), hex("2"), hex("4")
	book := mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{
		stray: {Parents: []string{hex("5"), src}, Committer: "mallory"},
	}}
	answer := func(m Merges, body string) (int, string) {
		h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}},
			Runner: passFunc(func() {}), Merges: m})
		if err != nil {
			t.Fatal(err)
		}
		status, ans := postHook(t, h, body)
		return status, fmt.Sprintf("%s %s", ans.Error, strings.Join(ans.Summary, " "))
	}
	s1, unknown := answer(book, callFor(src, hex("6")))
	s2, elsewhere := answer(book, callFor(src, stray))
	if s1 != http.StatusForbidden || s2 != http.StatusForbidden || unknown != elsewhere {
		t.Errorf("an unknown commit: %d %q; a commit that is not that merge: %d %q; want the same 403", s1, unknown, s2, elsewhere)
	}
	if strings.Contains(elsewhere, head[:8]) {
		t.Errorf("the refusal names the branch's head: %q", elsewhere)
	}
	secret := "repository secret-repo: GET http://lakefs.internal:8000/api/v1: 404 not found"
	s3, failed := answer(mergeBook{err: errors.New(secret)}, callFor(src, stray))
	if s3 != http.StatusInternalServerError || strings.Contains(failed, "lakefs.internal") || strings.Contains(failed, "secret-repo") {
		t.Errorf("lakeFS failing: %d %q; want 500 without lakeFS's error", s3, failed)
	}
}
