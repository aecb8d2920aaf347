package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lakewap/lakewap/internal/config"
)

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
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
