//go:build !linux

package redistest

import "syscall"

// sysProcAttr has nothing to set where Pdeathsig does not exist.
func sysProcAttr() *syscall.SysProcAttr { return nil }
