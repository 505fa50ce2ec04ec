//go:build race

package redlock_test

const raceEnabled = true
