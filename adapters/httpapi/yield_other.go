//go:build !linux

package httpapi

// yieldCore does nothing where sched_yield is not at hand (see yield_linux.go).
func yieldCore() {}
