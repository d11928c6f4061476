//go:build !race

package httpapi

const raceSlack = 0
