package audit

// Entries past a listing's per-entry limit that are on a dataset's target
// already (onBase): not a batch's doing, and every batch whose audit lists
// them fails until an operator removes them. Each batch's failed check names
// the entry; this tells it once more, once per entry, where an operator
// looks without reading batches: one error log when an audit first finds
// it, and the gauge lakewap_audit_target_entries_over_limit{dataset} until
// an audit of the dataset finds its target without it.

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
)

// maxTargetEntries bounds the entries kept per dataset (each audit finds
// at most one per listing it makes, a listing stops at its first refusal).
const maxTargetEntries = 100

// targetEntries are, per dataset, the entries over a limit its last
// completed audit found on its target (path to the target's name and
// commit). A dataset audited with none is kept with an empty set, so that
// its gauge reads 0 rather than vanishing.
type targetEntries struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

// found records the entries run r found on its target (r.held) as the
// dataset's, replacing those of its last audit, and logs those it had not
// already.
func (t *targetEntries) found(log *slog.Logger, r *run) {
	r.heldMu.Lock()
	now := maps.Clone(r.held)
	r.heldMu.Unlock()
	if now == nil {
		now = map[string]string{}
	}
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]map[string]string{}
	}
	before := t.m[r.req.Dataset]
	t.m[r.req.Dataset] = now
	t.mu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(now)) {
		if _, told := before[p]; told {
			continue
		}
		log.Error("audit: an object on the target is past a listing's per-entry limit, not a batch's: every batch of the dataset whose audit lists it is refused until you remove it from the target (delete it on that branch and commit, or revert the commit that brought it)",
			"path", clipPath(p), "target", now[p])
	}
	for p := range before {
		if _, still := now[p]; !still {
			log.Info("audit: the object past a listing's per-entry limit is no longer on the target", "path", clipPath(p))
		}
	}
}

// counts is the number of such entries per dataset audited.
func (t *targetEntries) counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.m))
	for d, s := range t.m {
		out[d] = len(s)
	}
	return out
}

// hold records that the entry at path is on the run's target (onBase).
func (r *run) hold(path string) {
	r.heldMu.Lock()
	defer r.heldMu.Unlock()
	if r.held == nil {
		r.held = map[string]string{}
	}
	if len(r.held) < maxTargetEntries {
		r.held[path] = r.baseName() + " (" + short(r.req.BaseRef) + ")"
	}
}

// TargetEntriesOverLimit is, per dataset audited onto a target, how many
// entries past a listing's per-entry limit its last completed audit found
// on the target.
func (e *Engine) TargetEntriesOverLimit() map[string]int { return e.targetEntries.counts() }
