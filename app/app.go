// Package app holds the use cases: it orchestrates the domain and the driven ports, and implements the driving
// ports that the HTTP adapter calls. It imports no adapter.
package app

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
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

// RandomToken returns n bytes of crypto randomness as lowercase base32 (no padding): unguessable id suffixes.
func RandomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}
