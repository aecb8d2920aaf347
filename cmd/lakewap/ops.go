package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/schemas"
)

// Operator commands. lakewap retry, cancel and revert change nothing
// themselves: each sends a request to the input topic, keyed by the batch
// id like every input, and the daemon that owns the batch's partition
// carries it out through its state machine (pipeline.Machine.Apply), so no
// command writes the state store behind the daemon. The command then waits
// on the results topic for the event that answers its request (the
// wap.request_id header) and prints it.

// Exit codes of the operator commands.
const (
	exitDone      = 0 // the daemon did what was asked
	exitNotDone   = 1 // the daemon answered: refused, or the retry did not publish
	exitUsage     = 2
	exitNoAnswer  = 3 // no daemon answered within -timeout
	defaultAnswer = 5 * time.Minute
)

// requestFlags are the flags every operator command takes.
type requestFlags struct {
	config, batch, dataset, by, reason string
	timeout                            time.Duration
}

func (f *requestFlags) register(fs *flag.FlagSet, batchHelp, reasonHelp string) {
	fs.StringVar(&f.config, "config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	fs.StringVar(&f.batch, "batch", "", batchHelp)
	fs.StringVar(&f.dataset, "dataset", "", "dataset of the batch (default: the only one in the config, else from the state store)")
	fs.StringVar(&f.by, "by", "", "who asks (default $USER)")
	if reasonHelp != "" {
		fs.StringVar(&f.reason, "reason", "", reasonHelp)
	}
	fs.DurationVar(&f.timeout, "timeout", defaultAnswer, "how long to wait for the daemon's answer")
}

// operatorHelp is each command's help of -batch and -reason ("": no -reason).
var operatorHelp = map[string][2]string{
	"retry":  {"batch id of a failed run, or an aborted one whose branch was kept (required)", ""},
	"cancel": {"batch id to cancel (required)", "why, recorded in BatchAborted"},
	"revert": {"batch id to revert (required)", "why, recorded in the revert commit and the event (required)"},
}

// cmdOperator runs lakewap retry, cancel or revert: it sends the request
// and prints the daemon's answer. cfg, when not nil, is used instead of
// the -config file (tests).
func cmdOperator(ctx context.Context, command string, args []string, stdout, stderr io.Writer, cfg *config.Config) int {
	help := operatorHelp[command]
	fs := newFlagSet(command)
	var f requestFlags
	f.register(fs, help[0], help[1])
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code // 0 after -h, else exitUsage
	}
	switch {
	case command == "revert" && (f.batch == "" || strings.TrimSpace(f.reason) == ""):
		fmt.Fprintln(stderr, "lakewap revert: -batch and -reason are required")
		return exitUsage
	case f.batch == "":
		fmt.Fprintf(stderr, "lakewap %s: -batch is required\n", command)
		return exitUsage
	}
	if cfg == nil {
		var ok bool
		if cfg, ok = loadClientConfig(f.config, stderr); !ok {
			return exitUsage
		}
	}
	t, err := opclient.Of(cfg, "")
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	defer t.Close()
	if f.by, err = signer(t, cfg, f.by); err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	dataset, err := runs.DatasetOf(ctx, cfg, f.batch, f.dataset)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitNotDone
	}
	r := opclient.Request{Batch: f.batch, Dataset: dataset, Reason: f.reason, By: f.by}
	req, id, err := opclient.NewRequest(command, r, time.Now().UTC().Truncate(time.Millisecond))
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	// What the daemon would dead-letter is refused here, not waited for.
	known := func(d string) bool { _, ok := cfg.Datasets[d]; return ok }
	if cfg.IsClient() {
		known = nil // a client config names no datasets: the daemon checks
	}
	if err := schemas.Validate(req, known, time.Now()); err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		return exitUsage
	}
	ans, err := t.Ask(ctx, cfg.Kafka, req, id, f.timeout, func(sent kafka.Message) {
		fmt.Fprintf(stdout, "%s %s sent to %s (partition %d, offset %d); waiting up to %s for the daemon's answer\n",
			req.EventType(), id, cfg.Kafka.RequestsTopic, sent.Partition, sent.Offset, f.timeout)
	})
	if err != nil {
		fmt.Fprintf(stderr, "lakewap %s: %v\n", command, err)
		if errors.Is(err, opclient.ErrNoAnswer) {
			return exitNoAnswer
		}
		return exitNotDone
	}
	if done := runs.WriteAnswer(stdout, req, ans); !done {
		return exitNotDone
	}
	return exitDone
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
