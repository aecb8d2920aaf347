package lakefs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// heapHeld is the heap in use after garbage collection.
func heapHeld() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLimits63RelinkedHoldsWithinTheListingBudget: Relinked compares the
// sealed commit's whole listing with its merge-base's. It held both
// listings whole and a map of the second by path: a listing holds at most
// Config.MaxListEntries times ListEntryBytes (and up to about an eighth
// more for the allocator's rounding of each string), so Relinked held more
// than twice the budget docs/limits.md states for a listing (512 MB for
// audit.max_list_objects' million; 1.1 GB). The heap is measured by the
// stand-in server, after collection, as it answers each page: what the
// client holds while it lists.
func TestLimits63RelinkedHoldsWithinTheListingBudget(t *testing.T) {
	const pages, perPage = 60, 1000
	entry := func(ref string, n, i int) map[string]any {
		// 145 + 145 + 134 + 88 = ListEntryBytes counted; relinked (same
		// checksum, another address) every 10th entry.
		p := fmt.Sprintf("t/%03d-%04d-", n, i)
		addr := "s" + strings.Repeat("y", 143) + ref[:1]
		if i%10 != 0 {
			addr = "s" + strings.Repeat("y", 144)
		}
		return object(p+strings.Repeat("x", 145-len(p)), addr, strings.Repeat("a", 134))
	}
	var mu sync.Mutex
	var peak uint64
	base := heapHeld()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /api/v1/repositories/lake/refs/{ref}/objects/ls
		parts := strings.Split(r.URL.Path, "/")
		ref := parts[len(parts)-3]
		n := 1
		if a := r.URL.Query().Get("after"); a != "" {
			k, err := strconv.Atoi(strings.TrimPrefix(a, "p"))
			if err != nil {
				t.Error(err)
			}
			n = k + 1
		}
		if h := heapHeld(); true {
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
		}
		results := make([]map[string]any, 0, perPage)
		for i := range perPage {
			results = append(results, entry(ref, n, i))
		}
		body, err := json.Marshal(map[string]any{"results": results, "pagination": map[string]any{
			"has_more": n < pages, "next_offset": fmt.Sprintf("p%06d", n), "results": len(results), "max_per_page": perPage}})
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c := clientOf(t, srv, pages*perPage)
	sealed, mainHead := strings.Repeat("a", 64), strings.Repeat("b", 64)
	c.bases.put("lake", sealed, mainHead, strings.Repeat("c", 64))
	out, err := c.Relinked(context.Background(), "lake", sealed, mainHead)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != pages*perPage/10 {
		t.Errorf("%d relinked paths; want %d", len(out), pages*perPage/10)
	}
	budget := float64(pages * perPage * ListEntryBytes)
	held := float64(peak) - float64(base)
	t.Logf("Relinked of two listings of %d entries held %.1f MB at most while listing, %.2f times a listing's budget of %.1f MB",
		pages*perPage, held/1e6, held/budget, budget/1e6)
	if held > budget*9/8 {
		t.Errorf("Relinked held %.1f MB while listing, %.2f times a listing's budget (%.1f MB); want at most an eighth more than it",
			held/1e6, held/budget, budget/1e6)
	}
}
