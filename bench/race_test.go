//go:build race

package bench

// raceEnabled: the race detector makes sync.Pool drop objects at random,
// so allocation counts are not the program's.
const raceEnabled = true
