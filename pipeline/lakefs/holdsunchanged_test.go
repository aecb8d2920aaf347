package lakefs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLimits63HoldsUnchangedReadsOneEntryPerPath: to tell whether a commit
// that brought a sealed commit in without merging it holds each of its
// changed paths unchanged, the client listed everything under each path
// as a prefix to find the one object: a writer's path "t/a" beside 5,000
// objects "t/a-..." made each look read five pages of 1,000 (and up to
// audit.max_list_objects entries, held, per changed path: 101 of them).
// One entry is asked for a path now: the path itself sorts first.
func TestLimits63HoldsUnchangedReadsOneEntryPerPath(t *testing.T) {
	var listed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch {
		case strings.Contains(r.URL.Path, "/diff/"):
			body = map[string]any{"results": []map[string]any{{"type": "changed", "path": "t/a", "path_type": "object", "size_bytes": 1}},
				"pagination": map[string]any{"has_more": false, "next_offset": "", "results": 1, "max_per_page": 1000}}
		case strings.HasSuffix(r.URL.Path, "/objects/ls"):
			n := int(listed.Add(1))
			amount := 1000
			if a := r.URL.Query().Get("amount"); a != "" {
				fmt.Sscan(a, &amount)
			}
			page, after := 0, r.URL.Query().Get("after")
			if after != "" {
				fmt.Sscanf(after, "p%d", &page)
			}
			var results []map[string]any
			for i := range min(amount, 1000) {
				p := fmt.Sprintf("t/a-%d-%04d", page, i)
				if page == 0 && i == 0 {
					p = "t/a"
				}
				results = append(results, object(p, "s3://b/same", "c"))
			}
			_ = n
			body = map[string]any{"results": results, "pagination": map[string]any{
				"has_more": page < 4, "next_offset": fmt.Sprintf("p%d", page+1), "results": len(results), "max_per_page": 1000}}
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	c := clientOf(t, srv, 0)
	ok, err := c.holdsUnchanged(context.Background(), "lake", Commit{ID: strings.Repeat("a", 64), Parents: []string{strings.Repeat("b", 64)}}, strings.Repeat("c", 64))
	if err != nil || !ok {
		t.Fatalf("holdsUnchanged: %v %v; want true", ok, err)
	}
	if n := listed.Load(); n > 2 {
		t.Errorf("%d listing pages read for one changed path (at the commit and at the sealed commit); want 2", n)
	}
}
