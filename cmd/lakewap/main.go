// Command lakewap turns Kafka events into Write-Audit-Publish runs on
// lakeFS. This package is the command line: the command tree (cobra), each
// command's flags, usage and exit codes. What a command does is in
// internal/cli, internal/daemon, internal/opclient and internal/harness.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lakewap/lakewap/internal/buildinfo"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// exitCode is a command's exit status other than 0, passed through cobra
// as an error; the command has printed why.
type exitCode int

func (c exitCode) Error() string { return "exit status " + strconv.Itoa(int(c)) }

// exit turns a command's exit status into what its RunE returns.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}

// usageError is a bad flag or argument: the command prints it with its
// usage and exits 2, as the Go flag package did.
type usageError struct{ error }

func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	if len(args) == 0 {
		fmt.Fprint(stderr, root.UsageString())
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root.SetArgs(normalizeArgs(args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	var bad usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "lakewap %s: %v\n\n%s", cmd.Name(), bad.error, cmd.UsageString())
		return 2
	default: // an unknown command
		fmt.Fprintf(stderr, "lakewap: %v\n\n%s", err, root.UsageString())
		return 2
	}
}

// longFlag is a flag spelled with one dash, the Go flag package's way
// (-config, -json=false), which lakewap's docs and scripts use.
var longFlag = regexp.MustCompile(`^-[A-Za-z][A-Za-z0-9-]+(=.*)?$`)

// normalizeArgs spells every single-dash long flag with two dashes, as
// cobra's flags want them: -config FILE and --config FILE are one flag.
// A value that itself looks like a flag (-reason -x) must be given as
// -reason=-x. The arguments of cobra's completion requests are left alone.
func normalizeArgs(args []string) []string {
	if strings.HasPrefix(args[0], "__complete") {
		return args
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if longFlag.MatchString(a) {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}

// flagError speaks as the Go flag package did: scripts and tests match
// "flag provided but not defined: -x".
func flagError(_ *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		msg = "flag provided but not defined: -" + name
	}
	return usageError{errors.New(msg)}
}

// noArgs refuses arguments after a command's flags.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

const rootUsage = `lakewap: Write-Audit-Publish for lakeFS, driven by Kafka events.

Usage:{{range .Commands}}{{if and .IsAvailableCommand (ne .Name "help")}}
  {{.UseLine}}
      {{.Short}}{{end}}{{end}}

Flags -config and --config are the same flag; every command prints its
results as JSON with -json. Run 'lakewap COMMAND -h' for a command's flags.
`

// commandUsage is every command's usage: one format for all.
const commandUsage = `Usage:
  {{.UseLine}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if .IsAvailableCommand}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}
`

// newRoot is the command tree.
func newRoot() *cobra.Command {
	cobra.EnableCommandSorting = false // the usage lists commands in the order below
	root := &cobra.Command{
		Use:           "lakewap",
		Short:         "Write-Audit-Publish for lakeFS, driven by Kafka events",
		Version:       buildinfo.Read().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.SetHelpTemplate(`{{with .Long}}{{. | trimTrailingWhitespaces}}

{{end}}{{.UsageString}}`)
	root.AddCommand(runCommand(), demoCommand(), validateCommand(), auditCommand(), verifyCommand(), runsCommand(),
		janitorCommand(), operatorCommand("retry"), operatorCommand("cancel"), operatorCommand("revert"),
		emitCommand(), tailCommand(), readyCommand(), registryCommand(), referenceCommand(), prepareCommand(),
		versionCommand())
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Use = "completion bash|zsh|fish|powershell"
			c.Short = "print the shell completion script (e.g. source <(lakewap completion bash))"
		}
	}
	for _, c := range root.Commands() {
		for _, c := range append(c.Commands(), c) {
			c.SetUsageTemplate(commandUsage)
			c.DisableFlagsInUseLine = true
		}
	}
	root.SetUsageTemplate(rootUsage)
	return root
}

// usage is the main usage, as lakewap without a command prints it.
func usage() string { return newRoot().UsageString() }
