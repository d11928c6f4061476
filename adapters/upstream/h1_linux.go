package upstream

import "syscall"

// peekWouldBlock peeks at a socket without waiting: true when there is nothing to read and no error.
func peekWouldBlock(fd uintptr, buf []byte) bool {
	_, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN
}
