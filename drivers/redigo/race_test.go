//go:build race

package redigo

// raceEnabled: the race detector makes sync.Pool drop objects at random,
// so allocation counts are not meaningful.
const raceEnabled = true
