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
}
