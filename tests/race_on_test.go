//go:build race

package tests

// raceEnabled: the tests run under the race detector, so tend is built with it too.
const raceEnabled = true
