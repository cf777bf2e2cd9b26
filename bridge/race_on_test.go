//go:build race

package bridge_test

// raceDetector says the race detector is on: its own memory (shadow
// memory, a history per goroutine ever started) grows with the work done
// and is never given back, so the process's RSS says nothing of the
// bridge's.
const raceDetector = true
