package audit

import (
	"fmt"
	"strings"
	"testing"
)

// The kept listings are bounded by their objects in all and by their
// number; the least recently used goes first, and a listing is never
// changed by what its reader does with it.
func TestListingCacheBounds(t *testing.T) {
	c := newListingCache(10)
	objs := func(n int) []Object {
		out := make([]Object, n)
		for i := range out {
			out[i] = Object{Path: fmt.Sprintf("t/%d", i), Address: fmt.Sprint("a", i), Size: 1}
		}
		return out
	}
	c.put("r", "c1", "t/", objs(4))
	c.put("r", "c2", "t/", objs(4))
	if _, ok := c.get("r", "c1", "t/"); !ok { // c1 used last: c2 goes first
		t.Fatal("c1 not kept")
	}
	c.put("r", "c3", "t/", objs(4))
	if _, ok := c.get("r", "c2", "t/"); ok {
		t.Error("12 objects kept, over the bound of 10")
	}
	got, ok := c.get("r", "c1", "t/")
	if !ok {
		t.Fatal("the most recently used listing went")
	}
	got[0].Path = "changed by a reader"
	if again, _ := c.get("r", "c1", "t/"); again[0].Path != "t/0" {
		t.Error("a reader changed the kept listing")
	}
	c.put("r", "big", "t/", objs(11))
	if _, ok := c.get("r", "big", "t/"); ok {
		t.Error("a listing over the whole bound was kept")
	}
	many := newListingCache(1 << 20)
	for i := range maxListings + 10 {
		many.put("r", fmt.Sprint("c", i), "t/", objs(1))
	}
	if many.order.Len() != maxListings || len(many.m) != maxListings {
		t.Errorf("%d listings kept, want at most %d", len(many.m), maxListings)
	}
}

// The kept listings are bounded by their bytes too: a writer chooses each
// object's path, checksum and address, up to what the lakeFS client lets
// through (1,024, 256 and 2,048 bytes). Before, 400 listings of 1,000
// such objects were within 400,000 objects and held 1.3 GB; an object is
// counted as its strings and 80 bytes, 128 MiB in all.
func TestListingCacheIsBoundedByItsBytes(t *testing.T) {
	c := newListingCache(listingCacheObjects)
	path, sum, addr := strings.Repeat("p", 1000), strings.Repeat("c", 256), strings.Repeat("a", 2048)
	objs := make([]Object, 1000)
	for i := range objs {
		objs[i] = Object{Path: path, Checksum: sum, Address: addr, Size: 1}
	}
	for i := range 400 {
		c.put("r", fmt.Sprint("c", i), "t/", objs)
	}
	held, kept := 0, 0
	for _, el := range c.m {
		for _, o := range el.Value.(*keptListing).objs {
			held += len(o.Path) + len(o.Checksum) + len(o.Address)
			kept++
		}
	}
	if held > 128<<20 || kept == 0 {
		t.Fatalf("%d objects kept, %d bytes of paths, checksums and addresses; want at most %d bytes, and some kept", kept, held, 128<<20)
	}
	if _, ok := c.get("r", "c399", "t/"); !ok {
		t.Error("the newest listing was not kept")
	}
}
