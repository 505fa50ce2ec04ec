//go:build race

package systest

const raceEnabled = true
