package output

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// Console is tend's own stdout or stderr shared by all containers; each Write of a whole
// line is atomic with respect to other containers (and to tend's own log when it writes
// through the same Console).
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	style Style
	width atomic.Int64 // the width names are padded to (Align)
}

// NewConsole serialises writes to w. An *Console passed as w is returned as is, so that
// tend's own log and the children's lines share one lock (and one style).
func NewConsole(w io.Writer) *Console {
	if o, ok := w.(*Console); ok {
		return o
	}
	return &Console{w: w}
}

// NewStyledConsole is NewConsole with st.
func NewStyledConsole(w io.Writer, st Style) *Console { return &Console{w: w, style: st} }

// Align pads the names of lines (when the style says so) to the longest of names:
// the spec's containers and init containers (a longer per-container init label,
// NAME/init[N], is printed as is). Lines written from now on, by every LineWriter,
// follow.
func (o *Console) Align(names ...string) {
	if !o.style.Align {
		return
	}
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	o.width.Store(int64(width))
}

// Write writes p, which should hold whole lines, with one write to the underlying
// writer that no other Write interleaves with. A slow writer makes the others wait:
// tend's console streams are Queues, which never block.
func (o *Console) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// Dropped is how many lines the Queue under o dropped; 0 for another writer.
func (o *Console) Dropped() uint64 {
	if c, ok := o.w.(*Queue); ok {
		return c.Dropped()
	}
	return 0
}

// Flush waits for the Queue under o to write out what it holds, or for ctx to end.
func (o *Console) Flush(ctx context.Context) {
	if c, ok := o.w.(*Queue); ok {
		c.Flush(ctx)
	}
}
