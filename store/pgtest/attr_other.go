//go:build !linux

package pgtest

import "syscall"

// sysProcAttr runs a child as cred's user (nil: ours).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
