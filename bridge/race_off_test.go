//go:build !race

package bridge_test

// raceDetector says the race detector is on (race_on_test.go).
const raceDetector = false
