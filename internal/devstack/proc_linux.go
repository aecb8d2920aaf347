package devstack

import "syscall"

// childProcAttr puts lakeFS in its own process group (so Close can signal
// everything it started) and has the kernel kill it if this process dies
// without calling Close, e.g. a test binary that panics or times out.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
