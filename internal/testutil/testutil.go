// Package testutil holds what tests of several packages need. Only tests import it,
// so none of it is linked into tend.
package testutil

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that proc's output poller (or a logger) may
// write while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
