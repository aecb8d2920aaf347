package main

import (
	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/cli"
)

// operatorUse is each operator command's usage line, summary, help of
// -batch and of -reason ("": no -reason).
var operatorUse = map[string][4]string{
	"retry": {"retry -config FILE -batch B [-by NAME] [-timeout D] [-json]",
		"ask the daemon to run a failed batch (or one aborted by its audit, failed, crashed or with unaudited objects, or a merge conflict, branch kept) again; print its outcome",
		"batch id of a failed run, or an aborted one whose branch was kept (required)", ""},
	"cancel": {"cancel -config FILE -batch B [-reason TEXT] [-by NAME] [-timeout D] [-json]",
		"ask the daemon to abort a batch that has not finished its audit",
		"batch id to cancel (required)", "why, recorded in BatchAborted"},
	"revert": {"revert -config FILE -batch B -reason TEXT [-force] [-by NAME] [-timeout D] [-json]",
		"ask the daemon to revert a published batch on its target (operator commands: exit 0 done, 1 refused or not done, 3 no answer)",
		"batch id to revert (required)", "why, recorded in the revert commit and the event (required)"},
}

// operatorCommand is lakewap retry, cancel or revert: it sends the request
// to the daemon and prints its answer.
func operatorCommand(name string) *cobra.Command {
	use := operatorUse[name]
	r := cli.Request{Command: name}
	c := &cobra.Command{
		Use:   use[0],
		Short: use[1],
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return exit(cli.Operate(c.Context(), r, nil, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := c.Flags()
	f.StringVar(&r.Config, "config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	f.StringVar(&r.Batch, "batch", "", use[2])
	f.StringVar(&r.Dataset, "dataset", "", "dataset of the batch (default: the only one in the config, else from the state store)")
	f.StringVar(&r.By, "by", "", "who asks (default $USER)")
	if use[3] != "" {
		f.StringVar(&r.Reason, "reason", "", use[3])
	}
	if name == "revert" {
		f.BoolVar(&r.Force, "force", false, "revert even when the target, as the revert leaves it, fails a check that passes on it now (the daemon audits it first)")
	}
	f.DurationVar(&r.Timeout, "timeout", cli.DefaultAnswer, "how long to wait for the daemon's answer")
	f.BoolVar(&r.JSON, "json", false, "print the request and the daemon's answer as one JSON line")
	return c
}
