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
	"unsafe"
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

// TestLimits63ListingBudgetCountsTheAllocatorsRounding: a listing's byte
// budget (Config.MaxListEntries times ListEntryBytes) counted each entry's
// strings by their lengths and each entry by its size, but the heap holds
// each string in the allocator's size class (a 65-byte string takes 80)
// and the entries in a slice grown ahead of them. A writer's entries of
// strings just past a size class, at the budget's average, made a listing
// hold more than its budget. The heap is measured after collection with
// the listing held.
func TestLimits63ListingBudgetCountsTheAllocatorsRounding(t *testing.T) {
	const maxList, perPage = 100_000, 1000
	type sizes struct{ path, address, checksum int }
	for _, tc := range []struct {
		name string
		// entries alternate between a and b; pages of them are served, as
		// many as the budget took when it counted lengths.
		a, b sizes
	}{
		{"strings of 145, 145, 134", sizes{145, 145, 134}, sizes{145, 145, 134}},
		{"strings of 65 and of 289, 289, 75", sizes{65, 65, 65}, sizes{289, 289, 75}},
		{"strings of 1000, 1793, 129", sizes{1000, 1793, 129}, sizes{1000, 1793, 129}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counted := (tc.a.path + tc.a.address + tc.a.checksum + tc.b.path + tc.b.address + tc.b.checksum + 2*88) / 2
			pages := min(maxList, maxList*ListEntryBytes/counted) / perPage
			srv, _ := entryServer(t, pages, func(n, i int) map[string]any {
				z := tc.a
				if i%2 == 1 {
					z = tc.b
				}
				p := fmt.Sprintf("t/%03d-%04d-", n, i)
				return object(p+strings.Repeat("x", z.path-len(p)), "s"+strings.Repeat("y", z.address-1), strings.Repeat("a", z.checksum))
			})
			c := clientOf(t, srv, maxList)
			before := heapHeld()
			objs, err := c.List(context.Background(), "lake", "main", "")
			held := float64(heapHeld()) - float64(before)
			runtime.KeepAlive(objs)
			budget := float64(maxList * ListEntryBytes)
			t.Logf("%d of %d entries (err %v): %.1f MB held, %.2f times the budget of %.1f MB", len(objs), pages*perPage, err != nil, held/1e6, held/budget, budget/1e6)
			if held > budget {
				t.Errorf("a listing of %d entries held %.1f MB, %.2f times its budget of %.1f MB", len(objs), held/1e6, held/budget, budget/1e6)
			}

			// The accounting against the heap, of a listing it takes (fewer
			// pages): at least what is held, and not far more.
			few := max(1, pages*8/10)
			srv, _ = entryServer(t, few, func(n, i int) map[string]any {
				z := tc.a
				if i%2 == 1 {
					z = tc.b
				}
				p := fmt.Sprintf("t/%03d-%04d-", n, i)
				return object(p+strings.Repeat("x", z.path-len(p)), "s"+strings.Repeat("y", z.address-1), strings.Repeat("a", z.checksum))
			})
			c = clientOf(t, srv, maxList)
			before = heapHeld()
			objs, err = c.List(context.Background(), "lake", "main", "")
			held = float64(heapHeld()) - float64(before)
			if err != nil {
				t.Fatalf("a listing of %d entries: %v", few*perPage, err)
			}
			count := cap(objs) * int(unsafe.Sizeof(objs[0]))
			for _, o := range objs {
				n, _ := vetObject(o)
				count += n
			}
			runtime.KeepAlive(objs)
			t.Logf("%d entries: counted %.1f MB, held %.1f MB (%.2f)", len(objs), float64(count)/1e6, held/1e6, float64(count)/held)
			if r := float64(count) / held; r < 0.98 || r > 1.1 {
				t.Errorf("a listing of %d entries counted %d bytes, %.2f times the %.0f it held; want 0.98 to 1.1 (what else the client holds)", len(objs), count, r, held)
			}
		})
	}
}

// BenchmarkListingHeldPerEntry measures what a listing of entries at the
// budget's average (512 bytes counted, strings just past a size class)
// holds on the heap per entry, against ListEntryBytes: run with
// go test ./pipeline/lakefs -run '^$' -bench BenchmarkListingHeldPerEntry -benchmem.
// The target: held-B/entry at most ListEntryBytes (512).
func BenchmarkListingHeldPerEntry(b *testing.B) {
	const pages, perPage = 100, 1000 // enough entries that the client's own buffers do not count
	t := &testing.T{}
	srv, served := entryServer(t, pages, func(n, i int) map[string]any {
		p := fmt.Sprintf("t/%03d-%04d-", n, i)
		return object(p+strings.Repeat("x", 129-len(p)), "s"+strings.Repeat("y", 128), strings.Repeat("a", 97))
	})
	defer srv.Close()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK", MaxListEntries: pages * perPage})
	if err != nil {
		b.Fatal(err)
	}
	var held float64
	var count int
	for b.Loop() {
		served.Store(0)
		before := heapHeld()
		objs, err := c.List(context.Background(), "lake", "main", "")
		if err != nil {
			b.Fatal(err)
		}
		held = (float64(heapHeld()) - float64(before)) / float64(len(objs))
		count = cap(objs) * int(unsafe.Sizeof(objs[0]))
		for _, o := range objs {
			n, _ := vetObject(o)
			count += n
		}
		runtime.KeepAlive(objs)
	}
	b.ReportMetric(held, "held-B/entry")
	b.ReportMetric(ListEntryBytes, "budget-B/entry")
	b.ReportMetric(float64(count)/float64(pages*perPage), "counted-B/entry")
}
