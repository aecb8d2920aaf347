package audit

import (
	"fmt"
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
