package output

import (
	"regexp"
	"sync/atomic"
)

// LineMatch calls onMatch once, for the first line of output (stdout or stderr) that
// re matches. The line is matched where it lies, never copied: the cost is one RE2
// match per line (linear in its length, at most MaxLine) until the first match.
type LineMatch struct {
	re      *regexp.Regexp
	onMatch func()
	matched atomic.Bool
}

// NewLineMatch returns a matcher for re.
func NewLineMatch(re *regexp.Regexp, onMatch func()) *LineMatch {
	return &LineMatch{re: re, onMatch: onMatch}
}

func (m *LineMatch) check(line []byte) {
	if !m.matched.Load() && m.re.Match(line) && m.matched.CompareAndSwap(false, true) {
		m.onMatch()
	}
}
