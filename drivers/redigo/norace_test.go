//go:build !race

package redigo

const raceEnabled = false
