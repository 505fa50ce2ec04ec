//go:build race

package sim

// Under the race detector only Campaign's workers share anything, and a
// schedule runs about ten times slower: fewer schedules check the same.
const raceEnabled = true
