package testbackend

import "syscall"

// sysProcAttr makes the kernel kill a backend when the test binary that
// started it dies (for example on a go test timeout), so none is left over.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
