package devstack

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// processCPU reads the same figure the kernel reports to the process
// itself, to /proc's tick (10 ms).
func TestProcessCPUMatchesRusage(t *testing.T) {
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	} // some CPU to measure
	got, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if d := want - got; want < 300*time.Millisecond || d < -20*time.Millisecond || d > 20*time.Millisecond {
		t.Errorf("processCPU = %v, getrusage = %v", got, want)
	}
}
