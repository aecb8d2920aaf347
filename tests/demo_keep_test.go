package tests

import (
	"bufio"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/config"
)

// lakewap demo --keep leaves its stack running with a config that the
// commands it prints work with, and stops the stack (the lakeFS child
// process included) on Ctrl-C.
func TestDemoKeepLeavesAWorkingStack(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "demo.yaml")
	cmd := exec.Command(lakewapBinary(t), "demo", "-keep", "-config", cfgPath)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	var said strings.Builder
	var lakefsURL, branch string
	for lines.Scan() {
		said.WriteString(lines.Text() + "\n")
		if m := regexp.MustCompile(`^  lakeFS  (http://\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			lakefsURL = m[1]
		}
		if m := regexp.MustCompile(`lakewap audit -config \S+ -dataset billing -ref (\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			branch = m[1]
		}
		if strings.HasPrefix(lines.Text(), "Press Ctrl-C") {
			break
		}
	}
	go func() { // keep reading: the demo must not block on a full pipe
		for lines.Scan() {
		}
	}()
	if !strings.Contains(said.String(), "config: "+cfgPath) || lakefsURL == "" {
		t.Fatalf("demo --keep printed no config line and lakeFS endpoint:\n%s", said.String())
	}
	if !strings.Contains(said.String(), "lakewap audit -config "+cfgPath) || branch == "" {
		t.Errorf("demo --keep does not print the audit hint with its config:\n%s", said.String())
	}

	code, out, errOut := runCLI(t, "runs", "-config", cfgPath, "-json")
	if code != 0 {
		t.Fatalf("runs -config %s: exit %d: %s", cfgPath, code, errOut)
	}
	states := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			BatchID string `json:"batch_id"`
			State   string `json:"state"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("runs -json line %q: %v", l, err)
		}
		states[r.BatchID] = r.State
	}
	if states["2026-11-29T02"] != "published" || states["2026-11-29T03"] != "aborted" {
		t.Errorf("runs on the kept stack: %v; want the demo's batch 02 published and 03 aborted\n%s", states, out)
	}
	code, out, errOut = runCLI(t, "audit", "-config", cfgPath, "-dataset", "billing", "-ref", "main", "-base", "main~1", "-json")
	if code != 0 || !strings.Contains(out, `"passed": true`) {
		t.Errorf("audit of main on the kept stack: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "audit", "-config", cfgPath, "-dataset", "billing", "-ref", branch)
	if code != 1 || !strings.Contains(out, "billing_id_not_null") {
		t.Errorf("audit of the aborted branch on the kept stack: exit %d, want 1 naming billing_id_not_null\n%s%s", code, out, errOut)
	}

	kept, err := config.Load(cfgPath)
	must(t, err)
	demoDir := filepath.Dir(kept.Audit.WorkDir)
	if pids := processesIn(t, demoDir); len(pids) == 0 {
		t.Fatalf("no process runs with %s on its command line: where is the demo's lakeFS?", demoDir)
	}

	must(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo --keep after SIGINT: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("demo --keep did not stop within 2 minutes of SIGINT")
	}
	u, err := url.Parse(lakefsURL)
	must(t, err)
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("lakeFS at %s still answers after the demo stopped", lakefsURL)
	}
	if pids := processesIn(t, demoDir); len(pids) > 0 {
		t.Errorf("processes %v (the demo's lakeFS) still run after the demo stopped", pids)
	}
}

// processesIn are the pids of the processes whose command line names dir
// (the demo's lakeFS runs with --config in it).
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(cmdlines) == 0 {
		t.Skipf("no /proc to look for processes in (%v)", err)
	}
	var pids []string
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}
