// Package loglimit bounds the log lines that outside input chooses the
// number of (dead letters of junk on the input topic, calls of the
// pre-merge hook by anyone holding its token): a line of one kind is let
// through a few times a minute, and the next one let through says how
// many were not. Metrics count every one; the log keeps the lines an
// operator needs from being buried, and the disk from filling.
//
// It imports only the standard library.
package loglimit

import (
	"sync"
	"time"
)

// MaxKinds bounds the kinds a Limit tells apart (fixed codes, such as a
// dead letter's reason); any past it share one window.
const MaxKinds = 64

// Limit lets a number of lines per kind through per minute. The zero
// Limit is ready to use.
type Limit struct {
	mu      sync.Mutex
	windows map[string]*window
}

type window struct {
	start  time.Time
	logged int
	missed int // not let through since the last line that was
}

// Allow says whether a line of kind may be logged at now, at most max of
// them a minute, and how many were not since the last one that was.
func (l *Limit) Allow(kind string, max int, now time.Time) (ok bool, missed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.windows == nil {
		l.windows = map[string]*window{}
	}
	w := l.windows[kind]
	if w == nil {
		if len(l.windows) >= MaxKinds {
			kind = ""
		}
		if w = l.windows[kind]; w == nil {
			w = &window{start: now}
			l.windows[kind] = w
		}
	}
	if now.Sub(w.start) >= time.Minute || now.Before(w.start) {
		w.start = now
		w.logged = 0
	}
	if w.logged >= max {
		w.missed++
		return false, 0
	}
	w.logged++
	missed = w.missed
	w.missed = 0
	return true, missed
}
