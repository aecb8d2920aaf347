package lakefs

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lookServer is a lakeFS API that merges into main (answering with commit
// merged), lists main at head, and answers merge-bases: base for the pair
// (sealed, merged) and baseAtHead for (sealed, head). Its branch listing
// answers once a merge-base request for (sealed, merged) came, or after a
// second (listedFirst then records that none came while it waited).
type lookServer struct {
	sealed, merged, head, base, baseAtHead string

	mu          sync.Mutex
	asked       []string // merge-base destinations, in order
	guessed     chan struct{}
	listedFirst bool
}

func (s *lookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.Contains(p, "/refs/") && strings.HasSuffix(p, "/merge/main"):
		_ = json.NewEncoder(w).Encode(map[string]string{"reference": s.merged})
	case strings.HasSuffix(p, "/branches"):
		select {
		case <-s.guessed:
		case <-time.After(time.Second):
			s.mu.Lock()
			s.listedFirst = true
			s.mu.Unlock()
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"pagination": map[string]any{"has_more": false, "next_offset": "", "results": 1, "max_per_page": 1000},
			"results": []map[string]string{{"id": "main", "commit_id": s.head}}})
	case strings.Contains(p, "/merge/"):
		dest := p[strings.LastIndex(p, "/")+1:]
		s.mu.Lock()
		s.asked = append(s.asked, dest)
		s.mu.Unlock()
		base := s.baseAtHead
		if dest == s.merged {
			base = s.base
			select {
			case s.guessed <- struct{}{}:
			default:
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"source_commit_id": s.sealed, "destination_commit_id": dest, "base_commit_id": base})
	default:
		http.Error(w, "unexpected "+r.Method+" "+p, http.StatusNotImplemented)
	}
}

func newLookServer(t *testing.T, head string) (*lookServer, *Client) {
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	s := &lookServer{sealed: id('5'), merged: id('a'), head: head, base: id('b'), baseAtHead: id('c'), guessed: make(chan struct{}, 1)}
	if head == "" {
		s.head = s.merged
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Merge(context.Background(), "repo", id('9'), "main", "publish", nil); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// The look at a branch this client merged into last asks for the
// merge-base with its merge commit while it lists the branch's head:
// when the head is that merge, the answer is ready when the listing is
// (the publish turn's look, one round trip instead of two). Before, the
// merge-base waited for the listing.
func TestMergeBaseWithOwnMergeIsAskedBesideTheHead(t *testing.T) {
	s, c := newLookServer(t, "")
	base, dest, err := c.MergeBase(context.Background(), "repo", s.sealed, "main")
	if err != nil {
		t.Fatal(err)
	}
	if base != s.base || dest != s.merged {
		t.Errorf("merge-base %s of %s, want %s of %s", base[:4], dest[:4], s.base[:4], s.merged[:4])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listedFirst {
		t.Error("the merge-base with the merge commit was asked for only after the branch was listed")
	}
	if len(s.asked) != 1 {
		t.Errorf("merge-bases asked for %v, want one, with the merge commit", s.asked)
	}
}

// When someone else moved the branch since this client's merge, the
// merge-base is the one with the head the listing gives.
func TestMergeBaseWhenTheBranchMovedSinceTheOwnMerge(t *testing.T) {
	s, c := newLookServer(t, strings.Repeat("d", 64))
	base, dest, err := c.MergeBase(context.Background(), "repo", s.sealed, "main")
	if err != nil {
		t.Fatal(err)
	}
	if base != s.baseAtHead || dest != s.head {
		t.Errorf("merge-base %s of %s, want %s of the head %s", base[:4], dest[:4], s.baseAtHead[:4], s.head[:4])
	}
}
