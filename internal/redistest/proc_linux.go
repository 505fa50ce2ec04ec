package redistest

import "syscall"

// sysProcAttr kills the server if the test binary dies without cleaning up
// (a panic or a test timeout), so no redis-server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
