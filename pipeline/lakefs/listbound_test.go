package lakefs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
)

// A listing lakewap takes whole (a table's objects, a batch's diff, the
// janitor's branches) stops once it is past Config.MaxListEntries, with an
// error naming the limit, instead of holding every entry first: a writer
// who stages millions of objects in its branch, or a server that answers
// "more" for ever, made lakewap hold the whole listing in memory (and
// never stop, for the server). The fake server below answers 50 full pages
// of a diff; the client's limit is 5,000.
func TestListingStopsPastItsLimit(t *testing.T) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := pages.Add(1)
		var b strings.Builder
		b.WriteString(`{"results":[`)
		for i := range 1000 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"type":"added","path":"t/p%d-%d","path_type":"object","size_bytes":1}`, n, i)
		}
		fmt.Fprintf(&b, `],"pagination":{"has_more":%t,"next_offset":"t/p%d-999","results":1000,"max_per_page":1000}}`, n < 50, n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(b.String()))
	}))
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK", MaxListEntries: 5000})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := c.Changes(context.Background(), "lake", "main", "wap-b1")
	if !errors.Is(err, ErrListOverLimit) || !strings.Contains(err.Error(), "5000") {
		t.Fatalf("Changes over the limit: %d changes, err %v; want ErrListOverLimit naming 5000", len(changes), err)
	}
	if errors.Is(err, pipeline.ErrTransient) {
		t.Errorf("a listing over its limit is retried: %v", err)
	}
	if n := pages.Load(); n > 6 {
		t.Errorf("%d pages read for a limit of 5,000 entries", n)
	}
}
