package audit

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLimits63ListingCacheCountsTheAllocatorsRounding: the kept listings'
// bytes (objectBytes) counted each object's strings by their lengths, but
// the heap holds each in the allocator's size class: a writer's paths,
// checksums and addresses of 65 bytes take 80 each, and listings of such
// objects held more than the cache's byte bound. The heap is measured
// after collection with only the cache holding the objects.
func TestLimits63ListingCacheCountsTheAllocatorsRounding(t *testing.T) {
	c := newListingCache(listingCacheObjects)
	c.maxBytes = 16 << 20
	pad := func(s string) string { return s + strings.Repeat("x", 65-len(s)) }
	before := heapInUse()
	for l := range 80 {
		objs := make([]Object, 1000)
		for i := range objs {
			objs[i] = Object{Path: pad(fmt.Sprintf("t/%d/%d/", l, i)), Checksum: pad(fmt.Sprintf("c%d-%d", l, i)),
				Address: pad(fmt.Sprintf("s3://b/%d/%d", l, i)), Size: 1}
		}
		c.put("r", fmt.Sprint("c", l), "t/", objs)
	}
	held := float64(heapInUse()) - float64(before)
	runtime.KeepAlive(c)
	t.Logf("the cache counts %d bytes of %d; the heap holds %.0f (%.2f of the bound)", c.bytes, c.maxBytes, held, held/float64(c.maxBytes))
	if held > float64(c.maxBytes)*1.02 {
		t.Errorf("the kept listings held %.1f MB, %.2f times the cache's bound of %.1f MB", held/1e6, held/float64(c.maxBytes), float64(c.maxBytes)/1e6)
	}
}
