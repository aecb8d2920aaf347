package schemas

import "sort"

// HeldBytes is the heap a string (or byte slice) of n bytes takes when it
// is allocated on its own, as a decoder allocates each string it reads: the
// allocator's size class (Go's classes to 2,048 bytes, checked against the
// heap a string of each length takes; a 65-byte string takes 80, 1,537
// takes 1,792), and past them n + n/4 + 16, which bounds every class to 32
// KiB and the 8 KiB pages of larger allocations. Byte budgets of what
// lakewap keeps count a writer's strings by it: counted by their lengths,
// strings just past a class held 8 to 14% over the budgets
// (TestLimits63ListingBudgetCountsTheAllocatorsRounding,
// TestLimits63ListingCacheCountsTheAllocatorsRounding).
func HeldBytes(n int) int {
	switch {
	case n <= 0:
		return 0
	case n <= sizeClasses[len(sizeClasses)-1]:
		return sizeClasses[sort.SearchInts(sizeClasses, n)]
	}
	return n + n/4 + 16
}

// sizeClasses are Go's allocator's size classes to 2,048 bytes (runtime
// sizeclasses.go; strings under 16 bytes share 16-byte blocks, counted as
// their class all the same).
var sizeClasses = []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048}
