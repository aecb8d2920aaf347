package runner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
)

// scriptedLake answers Published and Merge from a script.
type scriptedLake struct {
	Lake
	published []Publication
	mergeErr  error
	merges    int
}

func (l *scriptedLake) Published(context.Context, string, string, string, time.Time) (Publication, error) {
	p := l.published[0]
	if len(l.published) > 1 {
		l.published = l.published[1:]
	}
	return p, nil
}

func (l *scriptedLake) Merge(context.Context, string, string, string, string, map[string]string) (string, error) {
	l.merges++
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
		fresh     bool
		want      PublishResult
		wantErr   error
		merges    int
	}{
		{"new", []Publication{{Head: "h"}}, nil, false, PublishResult{CommitID: "m1"}, nil, 1},
		// A fresh publish does not look first (the script would say "on target").
		{"fresh", []Publication{{OnTarget: true, Merge: "m0"}}, nil, true, PublishResult{CommitID: "m1"}, nil, 1},
		{"already on target", []Publication{{OnTarget: true, Merge: "m0", Head: "h"}}, nil, false, PublishResult{CommitID: "m0", AlreadyPublished: true}, nil, 0},
		{"on target, merge not in the window", []Publication{{OnTarget: true, Head: "h"}}, nil, false, PublishResult{CommitID: "h", AlreadyPublished: true}, nil, 0},
		{"an overlapping attempt landed first", []Publication{{Head: "h"}, {OnTarget: true, Merge: "m0", Head: "m0"}}, noChanges, false,
			PublishResult{CommitID: "m0", AlreadyPublished: true}, nil, 1},
		{"lost answer, merged", []Publication{{Head: "h"}, {OnTarget: true, Merge: "m0", Head: "m0"}}, timeout, false,
			PublishResult{CommitID: "m0", AlreadyPublished: true}, nil, 1},
		{"lost answer, not merged", []Publication{{Head: "h"}}, timeout, false, PublishResult{}, ErrTransient, 1},
		{"empty batch", []Publication{{Head: "h"}}, noChanges, false, PublishResult{CommitID: "h", Empty: true}, nil, 1},
		{"conflict", []Publication{{Head: "h"}}, fmt.Errorf("c: %w", ErrMergeConflict), false, PublishResult{}, ErrMergeConflict, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &scriptedLake{published: tt.published, mergeErr: tt.mergeErr}
			got, err := Publish(context.Background(), l, PublishRequest{Sealed: "s", Fresh: tt.fresh}, func(string) {})
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) || l.merges != tt.merges {
				t.Errorf("Publish = %+v, %v after %d merges; want %+v, %v after %d", got, err, l.merges, tt.want, tt.wantErr, tt.merges)
			}
		})
	}
}
