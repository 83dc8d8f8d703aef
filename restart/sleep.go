package restart

import (
	"context"
	"time"
)

// Sleep waits d, the waiting half of every retry, unless ctx is done first; it reports
// whether the whole d passed. A d of 0 or less does not wait.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
