package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// Operator commands. lakewap retry, cancel and revert change nothing
// themselves: each sends a request to the requests topic, keyed by the
// batch id like every input, and the daemon that owns the batch's
// partition carries it out through its state machine, so no command writes
// the state store behind the daemon. The command then waits on the results
// topic for the event that answers its request (the wap.request_id header)
// and prints it.

// Exit codes of the operator commands.
const (
	ExitDone     = 0 // the daemon did what was asked
	ExitNotDone  = 1 // the daemon answered: refused, or the retry did not publish
	ExitUsage    = 2
	ExitNoAnswer = 3 // no daemon answered within the timeout
)

// DefaultAnswer is how long an operator command waits for the daemon's answer.
const DefaultAnswer = 5 * time.Minute

// Request is an operator command's flags.
type Request struct {
	Command                            string // retry, cancel or revert
	Config, Batch, Dataset, By, Reason string
	Timeout                            time.Duration
	JSON                               bool
	Force                              bool // revert only: skip the daemon's audit of the target as the revert leaves it
}

// Outcome is what an operator command prints with -json: the request sent
// and the daemon's answer.
type Outcome struct {
	RequestID  string          `json:"request_id"`
	Request    json.RawMessage `json:"request"`
	AnswerType string          `json:"answer_type"`
	Answer     json.RawMessage `json:"answer"`
	Done       bool            `json:"done"`
}

// Operate sends r's request and prints the daemon's answer. cfg, when not
// nil, is used instead of r.Config's file.
func Operate(ctx context.Context, r Request, cfg *config.Config, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		failf(stderr, "lakewap %s: %v", r.Command, err)
		return code
	}
	switch {
	case r.Command == "revert" && (r.Batch == "" || strings.TrimSpace(r.Reason) == ""):
		fmt.Fprintln(stderr, "lakewap revert: -batch and -reason are required")
		return ExitUsage
	case r.Batch == "":
		failf(stderr, "lakewap %s: -batch is required", r.Command)
		return ExitUsage
	}
	if cfg == nil {
		var ok bool
		if cfg, ok = LoadClientConfig(r.Config, stderr); !ok {
			return ExitUsage
		}
	}
	t, err := opclient.Of(cfg, "")
	if err != nil {
		return fail(ExitUsage, err)
	}
	defer t.Close()
	by, err := signer(t, cfg, r.By)
	if err != nil {
		return fail(ExitUsage, err)
	}
	dataset, err := runs.DatasetOf(ctx, cfg, r.Batch, r.Dataset)
	if err != nil {
		return fail(ExitNotDone, err)
	}
	o := opclient.Request{Batch: r.Batch, Dataset: dataset, Reason: r.Reason, By: by, Force: r.Force}
	req, id, err := opclient.NewRequest(r.Command, o, time.Now().UTC().Truncate(time.Millisecond))
	if err != nil {
		return fail(ExitUsage, err)
	}
	// What the daemon would dead-letter is refused here, not waited for.
	known := func(d string) bool { _, ok := cfg.Datasets[d]; return ok }
	if cfg.IsClient() {
		known = nil // a client config names no datasets: the daemon checks
	}
	if err := schemas.Validate(req, known, time.Now()); err != nil {
		return fail(ExitUsage, err)
	}
	progress := stdout
	if r.JSON {
		progress = stderr // stdout is the outcome alone
	}
	ans, err := t.Ask(ctx, cfg.Kafka, req, id, r.Timeout, func(sent kafka.Message) {
		fmt.Fprintf(progress, "%s %s sent to %s (partition %d, offset %d); waiting up to %s for the daemon's answer\n",
			req.EventType(), id, cfg.Kafka.RequestsTopic, sent.Partition, sent.Offset, r.Timeout)
	})
	if errors.Is(err, opclient.ErrNoAnswer) {
		return fail(ExitNoAnswer, err)
	} else if err != nil {
		return fail(ExitNotDone, err)
	}
	done := false
	if r.JSON {
		done = runs.WriteAnswer(io.Discard, req, ans)
		if err := writeOutcome(stdout, id, req, ans, done); err != nil {
			return fail(ExitNotDone, err)
		}
	} else {
		done = runs.WriteAnswer(stdout, req, ans)
	}
	if !done {
		return ExitNotDone
	}
	return ExitDone
}

func writeOutcome(w io.Writer, id string, req, ans schemas.Event, done bool) error {
	reqJSON, err := schemas.ToJSON(req)
	if err != nil {
		return err
	}
	ansJSON, err := schemas.ToJSON(ans)
	if err != nil {
		return err
	}
	return runs.WriteJSON(w, []Outcome{{RequestID: id, Request: reqJSON, AnswerType: ans.EventType(), Answer: ansJSON, Done: done}})
}

// signer makes t sign requests when cfg lists operators: as the operator
// by names, or the only one listed. It returns who asks.
func signer(t *opclient.Target, cfg *config.Config, by string) (string, error) {
	keys, err := cfg.OperatorKeys()
	if err != nil || len(keys) == 0 {
		return by, err
	}
	name := by
	if _, ok := keys[name]; !ok {
		if len(keys) != 1 || by != "" {
			return "", fmt.Errorf("the config lists operators: -by must name one of them (got %q)", by)
		}
		for n := range keys {
			name = n
		}
	}
	t.SignAs(name, keys[name])
	return name, nil
}
