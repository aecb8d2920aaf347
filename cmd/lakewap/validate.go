package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lakewap/lakewap/internal/config"
)

func cmdValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: lakewap validate CONFIG")
		return 2
	}
	_, err := config.Load(fs.Arg(0))
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			fmt.Fprintf(stderr, "%s: %d error(s)\n", fs.Arg(0), len(errs))
			for _, e := range errs {
				fmt.Fprintf(stderr, "  %v\n", e)
			}
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Arg(0), err)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\n", fs.Arg(0))
	return 0
}

// loadClientConfig loads a config for a client command (runs, retry,
// cancel, revert): a client config (only kafka, see config.LoadClient) or
// the daemon's. On error it prints every problem.
func loadClientConfig(path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.LoadClient(path)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap: config %s:\n%v\n", path, err)
		return nil, false
	}
	return cfg, true
}

// loadConfig loads a config for a command; on error it prints every problem
// with the file's name and reports false (the command then exits).
func loadConfig(path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap: config %s:\n%v\n", path, err)
		return nil, false
	}
	return cfg, true
}
