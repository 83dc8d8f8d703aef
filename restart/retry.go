package restart

import "time"

// Retry is the one policy runner of tend: stop and destroy handlers, notify actions
// and verify all run by it. It calls try up to maxTries times (at least once) until
// one succeeds: after tl.InitialDelay, and a time_limit period apart, measured from
// the start of one try to the start of the next and counted by consecutive failures
// (docs/reference.md "Fields and defaults", time_limit). wait sleeps d and reports whether to go on
// (false: cancelled, or what the tries were for is gone). Retry reports whether a try
// succeeded.
func Retry(tl TimeLimit, maxTries int, wait func(d time.Duration) bool, try func(n int) bool) bool {
	if tl.InitialDelay > 0 && !wait(tl.InitialDelay) {
		return false
	}
	maxTries = max(1, maxTries)
	for n := 1; ; n++ {
		started := time.Now()
		if try(n) {
			return true
		}
		if n == maxTries || !wait(tl.Wait(n, started, time.Now())) {
			return false
		}
	}
}
