// Package app holds the use cases: it orchestrates the domain and the driven ports, and implements the driving
// ports that the HTTP adapter calls. It imports no adapter.
package app

import (
	"time"

	"github.com/google/uuid"
)

// Env is what use cases take from the outside world besides their ports: the time and fresh identifiers.
// Tests inject fixed ones.
type Env struct {
	Now   func() time.Time
	NewID func() string
}

// SystemEnv reads the real clock and draws random UUIDs.
func SystemEnv() Env {
	return Env{
		Now:   func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }, // what databases keep
		NewID: uuid.NewString,
	}
}
