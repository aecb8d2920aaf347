package schemas

import (
	"runtime"
	"testing"
)

var heldSink []string

// TestHeldBytesBoundsTheHeapOfAString: HeldBytes is at least what a string
// of each length to 4 KiB takes on the heap, allocated on its own (as a
// decoder allocates it), and at most a quarter more and 16 bytes.
func TestHeldBytesBoundsTheHeapOfAString(t *testing.T) {
	b := make([]byte, 4096)
	for n := 16; n <= 4096; n += 1 + n/64 {
		took := 1 << 30
		for range 3 { // the least of three: another allocation may fall in one
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for range 64 {
				heldSink = append(heldSink[:0:0], string(b[:n]))
			}
			runtime.ReadMemStats(&m1)
			took = min(took, int(m1.TotalAlloc-m0.TotalAlloc)/64-16) // less the one-string slice
		}
		if h := HeldBytes(n); h < took || h > n+n/4+16 {
			t.Errorf("HeldBytes(%d) = %d; a string of %d bytes took %d", n, h, n, took)
		}
	}
}
