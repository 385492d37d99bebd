//go:build race

package e2e

// raceEnabled is true when the tests run under the race detector, which
// slows every stream down and caps a process at 8128 live goroutines.
const raceEnabled = true
