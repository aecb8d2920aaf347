package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lakewap completion bash prints a script bash accepts, and sourced, it
// completes lakewap's command names (and a command's flags) by asking the
// binary, as a shell does on TAB.
func TestCompletionBashCompletesCommands(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := lakewapBinary(t)
	code, script, errOut := runCLI(t, "completion", "bash")
	if code != 0 || !strings.Contains(script, "__start_lakewap") {
		t.Fatalf("completion bash: exit %d: %s", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "lakewap.bash")
	must(t, os.WriteFile(path, []byte(script), 0o600))
	if out, err := exec.Command(bash, "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n rejects the completion script: %v\n%s", err, out)
	}
	complete := func(words ...string) []string {
		t.Helper()
		// The words of a command line being completed, the last one under the cursor.
		// Without the bash-completion package, a stand-in for its one
		// function the script calls.
		sh := `[ -r /usr/share/bash-completion/bash_completion ] && source /usr/share/bash-completion/bash_completion
type _get_comp_words_by_ref >/dev/null 2>&1 || _get_comp_words_by_ref() {
  cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
__start_lakewap lakewap; printf '%s\n' "${COMPREPLY[@]}"`
		// stdout only: outside a real TAB, bash's compopt complains on stderr.
		out, err := exec.Command(bash, append([]string{"-c", sh, "bash", path, bin}, words...)...).Output()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", words, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		return got
	}
	got := complete("re")
	if strings.Join(got, " ") != "ready reference registry retry revert" {
		t.Errorf("lakewap re<TAB> offers %q, want ready reference registry retry revert", got)
	}
	if got := complete("audit", "--da"); strings.Join(got, " ") != "--dataset" {
		t.Errorf("lakewap audit --da<TAB> offers %q, want --dataset", got)
	}
	// emit parses its own flags: its events and their flags come from it.
	if got := complete("emit", "la"); strings.Join(got, " ") != "landed" {
		t.Errorf("lakewap emit la<TAB> offers %q, want landed", got)
	}
	if got := complete("emit", "-brokers", "b:9092", "landed", "--wr"); strings.Join(got, " ") != "--writes" {
		t.Errorf("lakewap emit -brokers b:9092 landed --wr<TAB> offers %q, want --writes", got)
	}
}

// emit parses its own flags (they may come before or after the event), so
// cobra knows only emit's: the event names, each event's flags and the
// values of FILE flags are completed by emit, in cobra's protocol (what the
// shells' scripts ask the binary: candidates, then ":directive").
func TestCompletionEmitEventsAndTheirFlags(t *testing.T) {
	complete := func(words ...string) (names []string, directive string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"__complete", "emit"}, words...)...)
		if code != 0 {
			t.Fatalf("__complete emit %q: exit %d: %s", words, code, errOut)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(l, ":") {
				directive = l
				continue
			}
			name, _, _ := strings.Cut(l, "\t")
			names = append(names, name)
		}
		slices.Sort(names)
		return names, directive
	}
	const files, noFiles = ":0", ":4" // cobra's ShellCompDirectiveDefault, ShellCompDirectiveNoFileComp
	for _, c := range []struct {
		words     []string
		want      string
		directive string
	}{
		{[]string{""}, "cancel landed write", noFiles},
		{[]string{"-config", "c.yaml", "w"}, "write", noFiles},
		{[]string{"landed", "--"}, "--at --batch --brokers --config --dataset --deadline --json --no-validate --producer --registry --source-ref --timeout --topic --writes --attr", noFiles},
		{[]string{"write", "-batch", "b1", "--"}, "--at --batch --brokers --config --dataset --json --no-validate --paths --registry --rows --timeout --topic --write", noFiles},
		{[]string{"cancel", "--re"}, "--reason --registry", noFiles},
		{[]string{"--bro"}, "--brokers", noFiles},
		{[]string{"landed", "--batch", ""}, "", noFiles},             // a value: nothing to offer
		{[]string{"landed", "--batch", "b1", ""}, "", noFiles},       // one event per command
		{[]string{"--json", ""}, "", files},                          // FILE
		{[]string{"write", "-batch", "b", "-config", ""}, "", files}, // FILE, after the event too
		{[]string{"--no-validate", "la"}, "landed", noFiles},         // a bool flag takes no value
		{[]string{"bogus", "--"}, "--brokers --config --json --no-validate --registry --timeout --topic", noFiles},
	} {
		names, directive := complete(c.words...)
		want := strings.Fields(c.want)
		slices.Sort(want)
		if !slices.Equal(names, want) || directive != c.directive {
			t.Errorf("lakewap emit %s<TAB>: %q %s, want %q %s", strings.Join(c.words, " "), names, directive, want, c.directive)
		}
	}
}
