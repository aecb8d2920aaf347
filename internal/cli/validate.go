package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/lakewap/lakewap/internal/config"
)

// Validation is what lakewap validate -json prints.
type Validation struct {
	File   string   `json:"file"`
	OK     bool     `json:"ok"`
	Errors []string `json:"errors"`
	// Warnings name what a valid config leaves unsigned (config.Unguarded).
	Warnings []string `json:"warnings"`
}

// Validate loads the config at path and names every problem: 0 valid, 1 not.
func Validate(path string, asJSON bool, stdout, stderr io.Writer) int {
	v := Validation{File: path, OK: true, Errors: []string{}, Warnings: []string{}}
	cfg, err := config.Load(path)
	if err == nil {
		v.Warnings = append(v.Warnings, cfg.Unguarded()...)
	}
	var errs config.Errors
	listed := errors.As(err, &errs)
	switch {
	case listed:
		for _, e := range errs {
			v.Errors = append(v.Errors, e.Error())
		}
	case err != nil:
		v.Errors = append(v.Errors, err.Error())
	}
	v.OK = err == nil
	switch {
	case asJSON:
		_ = writeIndented(stdout, v)
	case v.OK:
		fmt.Fprintf(stdout, "%s: ok\n", path)
		for _, w := range v.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	case listed:
		fmt.Fprintf(stderr, "%s: %d error(s)\n", path, len(v.Errors))
		for _, e := range v.Errors {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
	default:
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
	}
	if !v.OK {
		return 1
	}
	return 0
}
