// Package cli is what lakewap's commands do once their flags are parsed:
// each command is a function from its typed options to output and an exit
// code. cmd/lakewap keeps the flags, the usage and the exit codes' names;
// the work (audit, verify, operator requests, the registry, the janitor,
// the readiness probe, validation) is here, where it is tested without a
// command line.
//
// It imports the packages whose services the commands call, never the
// embedded stack.
package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/runs"
)

// LoadClientConfig loads a config for a client command (runs, retry,
// cancel, revert, registry): a client config (only kafka, see
// config.LoadClient) or the daemon's. On error it prints every problem.
func LoadClientConfig(path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.LoadClient(path)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap: config %s:\n%v\n", path, err)
		return nil, false
	}
	return cfg, true
}

// LoadConfig loads a config for a command; on error it prints every
// problem with the file's name and reports false (the command then exits).
func LoadConfig(path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap: config %s:\n%v\n", path, err)
		return nil, false
	}
	return cfg, true
}

// writeIndented prints v as one indented JSON document, escaped for
// terminals like every line lakewap prints.
func writeIndented(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(runs.JSONTerminalSafe(b), '\n'))
	return err
}

// failf prints one line to w (a command's stderr) with what a terminal
// would act on escaped (runs.Printable): errors carry lakeFS's and Kafka's
// text, object paths and record fields among them, which writers and
// producers choose (a path's escape sequences reached the operator's
// terminal raw through lakewap audit's "download <path>@ref: ...").
func failf(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, runs.Printable(fmt.Sprintf(format, args...)))
}
