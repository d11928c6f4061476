// Package logsink is a log destination for tests that read back what concurrent goroutines logged.
package logsink

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use; String is everything written so far.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
