package lakefs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/lakewap/lakewap/pipeline"
)

// entryServer is a lakeFS stand-in answering every object listing and
// every diff with pages made by entry (the i-th entry of page n), pages
// pages of 1,000 entries; it counts the pages it served.
func entryServer(t *testing.T, pages int, entry func(n, i int) map[string]any) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(served.Add(1))
		var results []map[string]any
		for i := range 1000 {
			results = append(results, entry(n, i))
		}
		body, err := json.Marshal(map[string]any{"results": results, "pagination": map[string]any{
			"has_more": n < pages, "next_offset": fmt.Sprintf("p%06d", n), "results": len(results), "max_per_page": 1000}})
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &served
}

func object(p, address, checksum string) map[string]any {
	return map[string]any{"path": p, "path_type": "object", "physical_address": address, "checksum": checksum,
		"mtime": 1, "size_bytes": 1, "content_type": "application/octet-stream"}
}

func clientOf(t *testing.T, srv *httptest.Server, maxList int) *Client {
	t.Helper()
	c, err := New(Config{Endpoint: srv.URL, AccessKeyID: "AK", SecretAccessKey: "SK", MaxListEntries: maxList})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refused checks that err refuses a listing for an entry past its limit:
// permanent, naming what and the limit, and short.
func refused(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if !errors.Is(err, ErrEntryOverLimit) || !errors.Is(err, ErrListOverLimit) {
		t.Errorf("%s: err %v; want ErrEntryOverLimit (and ErrListOverLimit)", what, err)
		return
	}
	if errors.Is(err, pipeline.ErrTransient) {
		t.Errorf("%s: an entry past its limit is retried: %v", what, err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: err %q does not name %q", what, err, n)
		}
	}
	if len(err.Error()) > 1024 {
		t.Errorf("%s: the error is %d bytes long", what, len(err.Error()))
	}
}

// TestListingRefusesPathsLongerThanAnObjectKey: lakeFS bounds no path
// (staged ones by its key-value store at most, committed ones not at all),
// and anyone writing the batch's branch chooses them. An object store key
// is at most 1,024 bytes (S3, GCS, Azure Blob): a longer path is no file a
// reader through the S3 gateway, or of the storage namespace, reads the
// way lakeFS lists it. The audit's listings and diffs held such paths
// whole: a page of 1,000 entries of 64 KiB paths, 1,000 pages to a
// listing, was gigabytes in lakewap's memory. Leaving them out would
// publish a file unaudited: the listing is refused, naming the path
// (clipped) and the limit.
func TestListingRefusesPathsLongerThanAnObjectKey(t *testing.T) {
	long := "tables/t/" + strings.Repeat("x", 64<<10) + ".parquet"
	srv, _ := entryServer(t, 1, func(n, i int) map[string]any {
		p := fmt.Sprintf("tables/t/part-%04d.parquet", i)
		if i == 500 {
			p = long
		}
		return object(p, "s3://bucket/ns/data/g0/c"+fmt.Sprint(i), strings.Repeat("a", 32))
	})
	c := clientOf(t, srv, 0)
	objs, err := c.List(context.Background(), "lake", "main", "tables/t/")
	held := 0
	for _, o := range objs {
		held += len(o.Path) + len(o.PhysicalAddress) + len(o.Checksum)
	}
	if err == nil {
		t.Errorf("List holds %d objects, %d bytes, one of a path of %d bytes; want it refused", len(objs), held, len(long))
	}
	refused(t, "List", err, "tables/t/xxx", "1024")

	diff, _ := entryServer(t, 1, func(n, i int) map[string]any {
		p := fmt.Sprintf("tables/t/part-%04d.parquet", i)
		if i == 999 {
			p = long
		}
		return map[string]any{"type": "added", "path": p, "path_type": "object", "size_bytes": 1}
	})
	c = clientOf(t, diff, 0)
	changes, err := c.Changes(context.Background(), "lake", "main", "wap-b1")
	if err == nil {
		t.Errorf("Changes holds %d changes, one of a path of %d bytes; want it refused", len(changes), len(long))
	}
	refused(t, "Changes", err, "tables/t/xxx", "1024")
	_, _, err = c.Differences(context.Background(), "lake", "a", "b", "", 10_000)
	refused(t, "Differences", err, "1024")
}

// TestListingRefusesAddressesAndChecksumsNoAdapterMakes: a writer links
// any physical address and claims any checksum (stageObject,
// linkPhysicalAddress); lakeFS's block adapters make addresses of an
// object key (at most 1,024 bytes) in a bucket or container, and checksums
// of an ETag or a digest (tens of bytes). Each object of a listing held
// them whole. A content type is not kept, but fills the listing's pages
// (TestWritersUserMetadataDoesNotFillTheListingsPages).
func TestListingRefusesAddressesAndChecksumsNoAdapterMakes(t *testing.T) {
	for _, tc := range []struct {
		name              string
		address, checksum string
		names             []string
	}{
		{"address", "s3://bucket/ns/" + strings.Repeat("y", 64<<10), strings.Repeat("a", 32), []string{"physical address", "2048"}},
		{"checksum", "s3://bucket/ns/data/g0/c1", strings.Repeat("z", 64<<10), []string{"checksum", "256"}},
		{"content type", "s3://bucket/ns/data/g0/c1", "", []string{"content type", "1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := entryServer(t, 1, func(n, i int) map[string]any {
				if i == 7 && tc.checksum == "" {
					o := object("tables/t/bad.parquet", tc.address, strings.Repeat("a", 32))
					o["content_type"] = "text/csv; x=" + strings.Repeat("t", 64<<10)
					return o
				}
				if i == 7 {
					return object("tables/t/bad.parquet", tc.address, tc.checksum)
				}
				return object(fmt.Sprintf("tables/t/part-%04d.parquet", i), "s3://bucket/ns/data/g0/c"+fmt.Sprint(i), strings.Repeat("a", 32))
			})
			c := clientOf(t, srv, 0)
			objs, err := c.List(context.Background(), "lake", "main", "")
			if err == nil {
				t.Errorf("List holds %d objects; want it refused", len(objs))
			}
			refused(t, "List", err, append(tc.names, "tables/t/bad.parquet")...)
		})
	}
}

// TestListingHoldsBoundedBytes: within every entry's limits, a writer's
// million entries of a 1,024-byte path, a 2,048-byte address and a
// 256-byte checksum were 3.3 GB held by one listing. A listing holds at
// most Config.MaxListEntries times 512 bytes of paths, addresses and
// checksums (512 MB for audit.max_list_objects' 1,000,000; an honest
// entry is about 200): past it the listing stops, as past its count.
func TestListingHoldsBoundedBytes(t *testing.T) {
	srv, served := entryServer(t, 5, func(n, i int) map[string]any {
		p := fmt.Sprintf("tables/t/%d-%04d-", n, i)
		return object(p+strings.Repeat("x", 1000-len(p)), "s3://bucket/"+strings.Repeat("y", 2000), strings.Repeat("a", 200))
	})
	c := clientOf(t, srv, 5000) // 5 pages of 1,000 are within the count
	objs, err := c.List(context.Background(), "lake", "main", "")
	held := 0
	for _, o := range objs {
		held += len(o.Path) + len(o.PhysicalAddress) + len(o.Checksum)
	}
	if !errors.Is(err, ErrListOverLimit) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("List holds %d objects, %d bytes for a listing of 5,000 entries (err %v); want ErrListOverLimit naming its bytes", len(objs), held, err)
	}
	if n := served.Load(); n > 1 {
		t.Errorf("%d pages read for a budget of 2,560,000 bytes (pages of 3.2 MB)", n)
	}
}

// TestListingBudgetCountsTheEntriesThemselves: the listing's byte budget
// (Config.MaxListEntries times ListEntryBytes) counted only the strings of
// its entries, not the entries that hold them (an Object is 88 bytes of
// string headers, size, time and the content type's length): a writer's
// entries of exactly 512 bytes of path, address and checksum each filled
// the budget to the byte and were taken, and such a listing of 100,000
// entries held 638 to 661 bytes a entry on the heap, 25 to 29% over the
// 512 MB stated for audit.max_list_objects' million. Each entry now counts
// its own size too, so the budget is what the listing holds but for the
// allocator's rounding of each string.
func TestListingBudgetCountsTheEntriesThemselves(t *testing.T) {
	srv, _ := entryServer(t, 5, func(n, i int) map[string]any {
		p := fmt.Sprintf("tables/t/%d-%04d-", n, i)
		// 200 + 250 + 62 = ListEntryBytes of strings.
		return object(p+strings.Repeat("x", 200-len(p)), "s3://bucket/"+strings.Repeat("y", 250-len("s3://bucket/")), strings.Repeat("a", 62))
	})
	c := clientOf(t, srv, 5000)
	objs, err := c.List(context.Background(), "lake", "main", "")
	held := 0
	for _, o := range objs {
		held += len(o.Path) + len(o.PhysicalAddress) + len(o.Checksum) + int(unsafe.Sizeof(o))
	}
	if budget := 5000 * ListEntryBytes; held > budget || !errors.Is(err, ErrListOverLimit) {
		t.Fatalf("List holds %d objects, %d bytes with the entries themselves, over its budget of %d (err %v); want ErrListOverLimit",
			len(objs), held, budget, err)
	}
}
