package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// scriptedLake answers Published and Merge from a script.
type scriptedLake struct {
	Lake
	published []Publication
	mergeErr  error
	merges    int
	sources   []string
	meta      map[string]string // of the last merge
}

func (l *scriptedLake) Published(context.Context, string, string, string, time.Time) (Publication, error) {
	p := l.published[0]
	if len(l.published) > 1 {
		l.published = l.published[1:]
	}
	return p, nil
}

func (l *scriptedLake) Merge(_ context.Context, _, source, _, _ string, meta map[string]string) (string, error) {
	l.merges++
	l.meta = meta
	l.sources = append(l.sources, source)
	if l.mergeErr != nil {
		return "", l.mergeErr
	}
	return "m1", nil
}

func TestPublish(t *testing.T) {
	noChanges := fmt.Errorf("no changes: %w", ErrNoChanges)
	timeout := fmt.Errorf("timeout: %w", ErrTransient)
	tests := []struct {
		name      string
		published []Publication
		mergeErr  error
		want      PublishResult
		wantErr   error
		merges    int
	}{
		{"new", []Publication{{Head: "h"}}, nil, PublishResult{CommitID: "m1"}, nil, 1},
		{"already on target", []Publication{{OnTarget: true, Merge: "m0", Head: "h"}}, nil, PublishResult{CommitID: "m0", AlreadyPublished: true}, nil, 0},
		{"on target, merge not in the window", []Publication{{OnTarget: true, Head: "h"}}, nil, PublishResult{CommitID: "h", AlreadyPublished: true}, nil, 0},
		{"an overlapping attempt landed first", []Publication{{Head: "h"}, {OnTarget: true, Merge: "m0", Head: "m0"}}, noChanges,
			PublishResult{CommitID: "m0", AlreadyPublished: true}, nil, 1},
		{"lost answer, merged", []Publication{{Head: "h"}, {OnTarget: true, Merge: "m0", Head: "m0"}}, timeout,
			PublishResult{CommitID: "m0", AlreadyPublished: true}, nil, 1},
		{"lost answer, not merged", []Publication{{Head: "h"}}, timeout, PublishResult{}, ErrTransient, 1},
		{"empty batch", []Publication{{Head: "h"}}, noChanges, PublishResult{CommitID: "h", Empty: true}, nil, 1},
		{"conflict", []Publication{{Head: "h"}}, fmt.Errorf("c: %w", ErrMergeConflict), PublishResult{}, ErrMergeConflict, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &scriptedLake{published: tt.published, mergeErr: tt.mergeErr}
			got, err := Publish(context.Background(), l, PublishRequest{Sealed: "s"}, func(string) {})
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) || l.merges != tt.merges {
				t.Errorf("Publish = %+v, %v after %d merges; want %+v, %v after %d", got, err, l.merges, tt.want, tt.wantErr, tt.merges)
			}
		})
	}
}

// A target that moved since the sealed commit's snapshot is rechecked
// before the merge, and the sealed commit itself is what is merged, with the
// recheck's metadata; a recheck that fails stops the publish with nothing
// merged. A target that did not move is merged without a recheck.
func TestPublishRechecksAMovedTarget(t *testing.T) {
	collision := errors.New("collides")
	for _, tt := range []struct {
		name       string
		pub        Publication
		recheckErr error
		rechecked  bool
		merged     []string
		meta       string
		want       PublishResult
	}{
		{"target did not move", Publication{Head: "h", Base: "h"}, nil, false, []string{"s"}, "audit", PublishResult{CommitID: "m1"}},
		{"target moved", Publication{Head: "h2", Base: "h"}, nil, true, []string{"s"}, "recheck", PublishResult{CommitID: "m1", RecheckedAt: Guess{Base: "h", Head: "h2"}}},
		{"target moved, collision", Publication{Head: "h2", Base: "h"}, collision, true, nil, "", PublishResult{}},
		{"merged by an older version's recheck", Publication{OnTarget: true, Merge: "m0", Head: "m0", Source: "r0"}, nil, false, nil, "",
			PublishResult{CommitID: "m0", Sealed: "r0", AlreadyPublished: true}},
	} {
		l := &scriptedLake{published: []Publication{tt.pub}}
		rechecked := false
		got, err := Publish(context.Background(), l, PublishRequest{Sealed: "s", Meta: map[string]string{"by": "audit"},
			Recheck: func(_ context.Context, base, head string) (map[string]string, error) {
				rechecked = true
				if base != tt.pub.Base || head != tt.pub.Head {
					t.Errorf("%s: Recheck(%s, %s)", tt.name, base, head)
				}
				return map[string]string{"by": "recheck"}, tt.recheckErr
			}}, func(string) {})
		if got != tt.want || !errors.Is(err, tt.recheckErr) || rechecked != tt.rechecked || fmt.Sprint(l.sources) != fmt.Sprint(tt.merged) {
			t.Errorf("%s: Publish = %+v, %v (rechecked %v, merged %v); want %+v, %v (rechecked %v, merged %v)",
				tt.name, got, err, rechecked, l.sources, tt.want, tt.recheckErr, tt.rechecked, tt.merged)
		}
		if l.merges > 0 && l.meta["by"] != tt.meta {
			t.Errorf("%s: merged with metadata of the %s; want the %s's", tt.name, l.meta["by"], tt.meta)
		}
	}
}

// A publish asks what its merge landed on (Config.Unattested) for a new
// merge and for one an earlier attempt made (a restart after the merge:
// the announcement is not lost), never for a batch that merged nothing.
func TestPublishAnnouncesWhatItsMergeLandedOn(t *testing.T) {
	for _, tt := range []struct {
		name     string
		pub      Publication
		mergeErr error
		asked    string // the merge commit Unattested is asked about; "" not asked
	}{
		{"new merge", Publication{Head: "h", Base: "h"}, nil, "m1"},
		{"merged before a crash", Publication{OnTarget: true, Merge: "m0", Head: "m0"}, nil, "m0"},
		{"nothing to merge", Publication{Head: "h", Base: "h"}, fmt.Errorf("no changes: %w", ErrNoChanges), ""},
	} {
		l := &scriptedLake{published: []Publication{tt.pub}, mergeErr: tt.mergeErr}
		asked := ""
		r := historyRunner(l, nil)
		r.cfg.Unattested = func(_ context.Context, run Run, merge string) ([]schemas.UnattestedChange, error) {
			asked = merge
			return []schemas.UnattestedChange{{EventID: "a1", Kind: schemas.ChangeUnattestedCommit, CommitID: "d1"}}, nil
		}
		in, ok := r.publish(context.Background(), historyRun(), nil).(Merged)
		if !ok || asked != tt.asked || (tt.asked != "") != (len(in.Changes) == 1) {
			t.Errorf("%s: %+v, asked about %q; want asked about %q and its answer in Merged", tt.name, in, asked, tt.asked)
		}
	}
}

// The recheck started beside the look against its guess (the target at
// lakewap's last merge into it) is the verdict only when the look finds
// exactly that head and foundation. Someone else committing to the target
// after that merge, or a foundation other than the guessed one, makes the
// guessed verdict void, pass or fail: the batch is rechecked against what
// the look found, and merged with that recheck's attestation.
func TestGuessedRecheckCountsOnlyWhenTheLookFindsTheGuess(t *testing.T) {
	collision := errors.New("collides with h1")
	guess := Guess{Base: "b", Head: "h1"}
	for _, tt := range []struct {
		name    string
		pub     Publication
		wantAt  []Guess // the rechecks run, in order of their start
		wantErr error
		meta    string
	}{
		{"the look finds the guess", Publication{Head: "h1", Base: "b"}, []Guess{guess}, collision, ""},
		{"another commit on the target since the own merge", Publication{Head: "h2", Base: "b"}, []Guess{guess, {Base: "b", Head: "h2"}}, nil, "recheck b h2"},
		{"another foundation", Publication{Head: "h1", Base: "b2"}, []Guess{guess, {Base: "b2", Head: "h1"}}, nil, "recheck b2 h1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &scriptedLake{published: []Publication{tt.pub}}
			var mu sync.Mutex
			var ran []Guess
			got, err := Publish(context.Background(), l, PublishRequest{Sealed: "s", Meta: map[string]string{"by": "audit"}, Guess: &guess,
				Recheck: func(_ context.Context, base, head string) (map[string]string, error) {
					mu.Lock()
					ran = append(ran, Guess{Base: base, Head: head})
					mu.Unlock()
					if head == "h1" && base == "b" {
						return nil, collision // against the guessed head, the batch fails
					}
					return map[string]string{"by": "recheck " + base + " " + head}, nil
				}}, func(string) {})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Publish = %+v, %v; want error %v", got, err, tt.wantErr)
			}
			if fmt.Sprint(ran) != fmt.Sprint(tt.wantAt) {
				t.Errorf("rechecks against %v; want %v", ran, tt.wantAt)
			}
			if tt.wantErr != nil {
				if l.merges != 0 {
					t.Errorf("merged %d times after the recheck failed", l.merges)
				}
				return
			}
			if l.merges != 1 || l.meta["by"] != tt.meta {
				t.Errorf("merged %d times with the metadata of %q; want once, with %q", l.merges, l.meta["by"], tt.meta)
			}
			if want := (Guess{Base: tt.pub.Base, Head: tt.pub.Head}); got.RecheckedAt != want {
				t.Errorf("RecheckedAt = %+v; want %+v", got.RecheckedAt, want)
			}
		})
	}
}
