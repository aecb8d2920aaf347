//go:build unix && !linux

package devstack

import "syscall"

// childProcAttr puts lakeFS in its own process group so Close can signal it.
// There is no parent-death signal outside Linux: a crashed parent can leave
// lakeFS running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
