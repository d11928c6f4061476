package httpapi

import "syscall"

// yieldCore gives the calling thread's core to whatever else is ready to run on it (sched_yield), and returns at
// once when nothing is. Through syscall.Syscall, so that the runtime may hand the thread's P to another while the
// kernel runs the others.
func yieldCore() { _, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
