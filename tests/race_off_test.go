//go:build !race

package tests

// raceEnabled: the tests run without the race detector, and so does tend.
const raceEnabled = false
