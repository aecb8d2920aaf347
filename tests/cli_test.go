package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/internal/config"
)

// The commands run as the operator runs them: the lakewap binary, built
// once per test process from this tree, with a config file.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// lakewapBinary builds cmd/lakewap once per test process: crash tests run
// it as a real process so that SIGKILL means what it means in production,
// and the command tests run it as an operator would.
func lakewapBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lakewap-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lakewap")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/lakewap/lakewap/cmd/lakewap").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// runCLI runs the lakewap binary with args, within 5 minutes.
func runCLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, lakewapBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("lakewap %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// writeConfig writes cfg as a config file for the commands, and checks
// that it loads.
func writeConfig(t testing.TB, cfg *config.Config) string {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	must(t, err)
	if _, err := config.ParseIn(b, func(string) (string, bool) { return "", false }, ""); err != nil {
		t.Fatalf("the written config does not load: %v\n%s", err, b)
	}
	p := filepath.Join(t.TempDir(), "lakewap.yaml")
	must(t, os.WriteFile(p, b, 0o600))
	return p
}

// cli runs a command that must succeed and returns its output.
func cli(t testing.TB, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("lakewap %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}
