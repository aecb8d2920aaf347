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
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for start := rusage(); rusage()-start < 200*time.Millisecond; {
	} // some CPU to measure
	got, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := rusage()
	if d := want - got; d < -20*time.Millisecond || d > 20*time.Millisecond {
		t.Errorf("processCPU = %v, getrusage = %v", got, want)
	}
}
