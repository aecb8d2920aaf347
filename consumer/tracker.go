package consumer

import "sync"

// offsetTracker remembers, for one partition, which fetched messages are
// fully handled, so the commit position never passes a message whose effects
// are not durable. Offsets are tracked in fetch order rather than assumed to
// be consecutive: transaction markers and compaction leave gaps.
type offsetTracker struct {
	mu        sync.Mutex
	inflight  []int64        // fetched, not yet part of the committable prefix, in fetch order
	done      map[int64]bool // subset of inflight that is handled
	next      int64          // offset to commit: one past the handled prefix; -1 until known
	committed int64          // last offset committed to the group; -1 if none by us
}

func newOffsetTracker() *offsetTracker {
	return &offsetTracker{done: map[int64]bool{}, next: -1, committed: -1}
}

// fetched registers a message before it is handed to the Handler.
func (t *offsetTracker) fetched(offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inflight = append(t.inflight, offset)
}

// markDone records that a message's effects are durable (or that it was
// dead-lettered) and advances the commit position over the handled prefix.
func (t *offsetTracker) markDone(offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done[offset] = true
	for len(t.inflight) > 0 && t.done[t.inflight[0]] {
		head := t.inflight[0]
		delete(t.done, head)
		t.inflight = t.inflight[1:]
		t.next = head + 1
	}
}

// toCommit returns the position to commit if it moved since the last commit.
func (t *offsetTracker) toCommit() (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next < 0 || t.next == t.committed {
		return 0, false
	}
	return t.next, true
}

// setCommitted records a successful commit of offset. Commits are
// serialized (Consumer.commitMu); one may move back, after the fetch moved
// to the partition's first offset from a position past its end.
func (t *offsetTracker) setCommitted(offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.committed = offset
}

// committedOffset is the last offset committed to the group by us, -1 if none.
func (t *offsetTracker) committedOffset() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.committed
}

// position returns where the group would resume: the commit position, or
// the first fetched message if none is handled yet (-1 if nothing fetched).
func (t *offsetTracker) position() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next < 0 && len(t.inflight) > 0 {
		return t.inflight[0]
	}
	return t.next
}
