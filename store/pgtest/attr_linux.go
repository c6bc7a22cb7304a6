package pgtest

import "syscall"

// sysProcAttr runs a child as cred's user (nil: ours), killed when the test
// binary dies (a timeout's panic skips Run's stop).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
