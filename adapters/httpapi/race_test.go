//go:build race

package httpapi

// raceSlack is what the race detector adds to a call's allocations (58 for a chat call where 51 without it): it
// drops pooled buffers at random.
const raceSlack = 10
