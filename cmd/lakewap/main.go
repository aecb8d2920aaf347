// Command lakewap turns Kafka events into Write-Audit-Publish runs on
// lakeFS. It is the only package that imports every other one: it wires
// config, Kafka, lakeFS, DuckDB and the notifiers together.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lakewap/lakewap/internal/buildinfo"
)

const usage = `lakewap: Write-Audit-Publish for lakeFS, driven by Kafka events.

Usage:
  lakewap run      -config FILE         run the daemon
  lakewap demo                          the embedded stack, a good and a bad batch
  lakewap validate FILE                 check a config file, naming every bad field
  lakewap audit    -config FILE -dataset D -ref R [-base B] [-json] [-full]
                                        run a dataset's suite against any ref, publish nothing
                                        (exit 0 passed, 1 failed, 2 could not run)
  lakewap verify   -config FILE -dataset D [-since T]
                                        list the target's commits as lakewap's attested publishes
                                        or not (exit 0 all attested, 1 any not, 2 could not tell)
  lakewap runs     -config FILE         list runs from the state store [-state S] [-json]
  lakewap janitor  -config FILE         delete expired and abandoned wap- branches [-dry-run]
  lakewap retry    -config FILE -batch B [-by NAME] [-timeout D]
                                        ask the daemon to run a failed batch (or one aborted by its audit
                                        or a merge conflict, branch kept) again; print its outcome
  lakewap cancel   -config FILE -batch B [-reason TEXT] [-by NAME] [-timeout D]
                                        ask the daemon to abort a batch that has not finished its audit
  lakewap revert   -config FILE -batch B -reason TEXT [-by NAME] [-timeout D]
                                        ask the daemon to revert a published batch on its target
                                        (operator commands: exit 0 done, 1 refused or not done, 3 no answer)
  lakewap emit     [--brokers B | --config F] landed|write|cancel FLAGS, or --json FILE
                                        produce an input event as upstream would
  lakewap tail     [--brokers B | --config F] [--topic T] [--from-beginning] [--follow=false]
                                        print a topic's events (default: results) as JSON lines
  lakewap ready    [-config FILE | -url URL]
                                        exit 0 when the daemon's /readyz answers 200 (container health check)
  lakewap registry -config FILE [-compatibility LEVEL] [-json]
                                        register the schemas' subjects in the schema registry ahead of time
  lakewap reference [-check]            write the reference pages (docs/reference/) from the code
  lakewap prepare                       build the embedded stack's lakeFS server (done on first use anyway)
  lakewap version                       the build: module version or VCS revision (also --version)

Run 'lakewap COMMAND -h' for a command's flags.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	commands := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"run": cmdRun, "demo": cmdDemo, "audit": cmdAudit, "verify": cmdVerify, "runs": cmdRuns, "janitor": cmdJanitor,
		"emit": cmdEmit, "tail": cmdTail, "ready": cmdReady, "prepare": cmdPrepare, "validate": cmdValidate,
		"reference": cmdReference, "registry": cmdRegistry,
	}
	switch cmd {
	case "retry", "cancel", "revert":
		return cmdOperator(ctx, cmd, rest, stdout, stderr, nil)
	case "version":
		fs := newFlagSet("version")
		if code, ok := parseFlags(fs, rest, stdout, stderr); !ok {
			return code
		}
		fmt.Fprintln(stdout, buildinfo.Read())
		return 0
	case "--version", "-version":
		fmt.Fprintln(stdout, buildinfo.Read())
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	if c, ok := commands[cmd]; ok {
		return c(ctx, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "lakewap: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// newFlagSet is the flag set of command name; its usage is the command's
// lines of the main usage, then its flags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n%s\nFlags:\n", commandUsage(name))
		fs.PrintDefaults()
	}
	return fs
}

// commandUsage is the lines of usage about command name.
func commandUsage(name string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(usage, "\n") {
		switch {
		case strings.HasPrefix(l, "  lakewap "):
			in = strings.HasPrefix(l, "  lakewap "+name+" ") || l == "  lakewap "+name
		case !strings.HasPrefix(l, "    "):
			in = false
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// parseFlags parses a command's flags. -h or --help prints the command's
// usage to stdout, and the command is done: exit 0. A bad flag prints the
// problem and the usage to stderr: exit 2. ok says whether to go on.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = out.WriteTo(stdout)
		return 0, false
	case err != nil:
		_, _ = out.WriteTo(stderr)
		return 2, false
	}
	return 0, true
}
