package audit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// statsChildEnv makes the test binary a child that writes one statistics
// record into the directory it names and SIGKILLs itself at the failpoint
// it names: "<failpoint>:<dir>".
const statsChildEnv = "LAKEWAP_TEST_STATS_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(statsChildEnv); v != "" {
		point, dir, _ := strings.Cut(v, ":")
		s, err := NewStatsStore(dir)
		if err != nil {
			os.Exit(3)
		}
		s.failpoint = func(name string) {
			if name == point {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal ends the process
			}
		}
		_ = s.put(statsTestKey, fileStats{Rows: 2})
		os.Exit(4) // the failpoint was not reached
	}
	os.Exit(m.Run())
}

const statsTestKey = "ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"

// TestStatsWriteKilledByTheKernel: a process SIGKILLed while it rewrites a
// statistics record (half of the new record written to its temporary
// file, or just after the rename) leaves the old record or the new one,
// never a torn one; a restarted store reads it, and the leftover temporary
// file is never taken for a record.
func TestStatsWriteKilledByTheKernel(t *testing.T) {
	for _, tc := range []struct {
		point    string
		wantRows int64
	}{{"stats_half_written", 1}, {"after_stats", 2}} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			s, err := NewStatsStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.put(statsTestKey, fileStats{Rows: 1}); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), statsChildEnv+"="+tc.point+":"+dir)
			err = cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want killed by SIGKILL at %s", err, tc.point)
			}
			restarted, err := NewStatsStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := restarted.get(statsTestKey)
			if !ok || got.Rows != tc.wantRows {
				t.Fatalf("after the kill: %+v %v, want the record with %d rows", got, ok, tc.wantRows)
			}
			parts, _ := filepath.Glob(filepath.Join(filepath.Dir(restarted.path(statsTestKey)), ".part-*"))
			if tc.point == "stats_half_written" && len(parts) != 1 {
				t.Errorf("temporary files %v, want the one the kill left", parts)
			}
			for _, p := range parts {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), `"sum"`) {
					t.Errorf("temporary file %s holds a whole record", p)
				}
			}
		})
	}
}
