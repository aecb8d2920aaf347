package opclient

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// EventFlags defines on fs the flags of the input event named kind (landed,
// write, cancel, or its type's name in any case, with or without - and _),
// and returns what builds the event once fs is parsed, occurred at now
// unless --at says otherwise (lakewap emit).
func EventFlags(kind string, fs *flag.FlagSet) (build func(now time.Time) (schemas.Event, error), err error) {
	var batch, dataset, at string
	fs.StringVar(&batch, "batch", "", "batch id (required)")
	fs.StringVar(&dataset, "dataset", "", "dataset (required)")
	fs.StringVar(&at, "at", "", "occurred_at, RFC 3339 (default now)")
	var event func(occurred time.Time) (schemas.Event, error)
	switch strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(kind)) {
	case "landed", "batchlanded":
		var writes, deadline, sourceRef, producer string
		attrs := map[string]string{}
		fs.StringVar(&writes, "writes", "", "comma-separated expected writes (required)")
		fs.StringVar(&deadline, "deadline", "", "write deadline: a duration from occurred_at (2h) or an RFC 3339 time (default: the dataset's write_timeout)")
		fs.StringVar(&sourceRef, "source-ref", "", "lakeFS `ref` to create the batch branch from (default: the dataset's target)")
		fs.StringVar(&producer, "producer", "lakewap emit", "producer name")
		fs.Func("attr", "attribute `k=v` (repeatable)", func(s string) error {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return fmt.Errorf("want k=v, got %q", s)
			}
			attrs[k] = v
			return nil
		})
		event = func(occurred time.Time) (schemas.Event, error) {
			ev := schemas.BatchLanded{BatchID: batch, Dataset: dataset, SourceRef: sourceRef, ExpectedWrites: SplitList(writes),
				Attributes: attrs, Producer: producer, OccurredAt: occurred}
			if deadline != "" {
				d, err := parseDeadline(deadline, occurred)
				if err != nil {
					return nil, err
				}
				ev.WriteDeadline = &d
			}
			return ev, nil
		}
	case "write", "writecomplete":
		var write, paths string
		var rows int64
		fs.StringVar(&write, "write", "", "name of the expected write that is complete (required)")
		fs.StringVar(&paths, "paths", "", "comma-separated object paths written on the batch's branch")
		fs.Int64Var(&rows, "rows", 0, "rows written (sent only when given)")
		event = func(occurred time.Time) (schemas.Event, error) {
			ev := schemas.WriteComplete{BatchID: batch, Dataset: dataset, Write: write, Paths: SplitList(paths), OccurredAt: occurred}
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "rows" {
					ev.RowCount = &rows
				}
			})
			return ev, nil
		}
	case "cancel", "cancelled", "batchcancelled":
		var reason string
		fs.StringVar(&reason, "reason", "", "why the batch is cancelled")
		event = func(occurred time.Time) (schemas.Event, error) {
			return schemas.BatchCancelled{BatchID: batch, Dataset: dataset, Reason: reason, OccurredAt: occurred}, nil
		}
	default:
		return nil, fmt.Errorf("unknown event %q: want landed, write or cancel (or --json)", kind)
	}
	return func(now time.Time) (schemas.Event, error) {
		occurred, err := parseAt(at, now)
		if err != nil {
			return nil, err
		}
		return event(occurred)
	}, nil
}

func parseAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--at: %w", err)
	}
	return t.UTC(), nil
}

// parseDeadline reads "2h" (after from) or an RFC 3339 time.
func parseDeadline(s string, from time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return from.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--deadline %q is neither a duration (2h) nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

// SplitList is the non-empty items of a comma-separated list; never nil.
func SplitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Request is what an operator asks the daemon about one batch (lakewap
// retry, cancel, revert).
type Request struct {
	Batch, Dataset, Reason string
	By                     string // who asks; "" is $USER
	Force                  bool   // revert: without the daemon's audit of the target as it leaves it
}

// NewRequest is the event of command's request, with a new request id
// (the wap.request_id the daemon's answer carries).
func NewRequest(command string, r Request, now time.Time) (ev schemas.Event, id string, err error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id = "req-" + hex.EncodeToString(b)
	by := cmp.Or(r.By, os.Getenv("USER"), "unknown")
	switch command {
	case "retry":
		ev = schemas.RetryRequested{RequestID: id, BatchID: r.Batch, Dataset: r.Dataset, RequestedBy: by, OccurredAt: now}
	case "cancel":
		ev = schemas.BatchCancelled{RequestID: id, BatchID: r.Batch, Dataset: r.Dataset, Reason: r.Reason, RequestedBy: by, OccurredAt: now}
	case "revert":
		ev = schemas.RevertRequested{RequestID: id, BatchID: r.Batch, Dataset: r.Dataset, Reason: r.Reason, RequestedBy: by, OccurredAt: now, Force: r.Force}
	default:
		return nil, "", fmt.Errorf("%q is not an operator request (retry, cancel, revert)", command)
	}
	return ev, id, nil
}
