// Package contract holds the store ports' contract suites. Each suite takes a factory for its port, so every
// implementation runs the same checks: the GORM stores run them on PostgreSQL and on SQLite
// (test/integration), and a second implementation (in memory, another database) only needs a factory.
//
// A factory returns a store over fresh, empty state (a newly migrated database).
package contract

import (
	"time"
)

// t0 is the suites' fixed clock, with microseconds (what both dialects keep).
var t0 = time.Date(2026, 3, 18, 15, 4, 5, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }
