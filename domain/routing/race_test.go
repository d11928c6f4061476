//go:build race

package routing_test

// raceSlack is the allocations the race detector's instrumentation adds to a call that makes none.
const raceSlack = 2
