package output

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// since is every kept line from on, in one batch.
func since(r *Ring, from uint64) ([]Line, uint64, uint64) {
	return r.Read(nil, from, math.MaxInt)
}

func ringLines(r *Ring, from uint64) (string, uint64, uint64) {
	lines, next, lost := since(r, from)
	var b []string
	for _, l := range lines {
		b = append(b, l.Line)
	}
	return strings.Join(b, ","), next, lost
}

func TestLogRingKeepsTheLast(t *testing.T) {
	r := NewRing("web", 3)
	for i := range 5 {
		r.add(i%2 == 1, fmt.Appendf(nil, "l%d", i))
	}
	if got, next, lost := ringLines(r, 0); got != "l2,l3,l4" || next != 5 || lost != 2 {
		t.Errorf("Since(0) = %q next %d lost %d, want l2,l3,l4 next 5 lost 2", got, next, lost)
	}
	if got, _, lost := ringLines(r, 4); got != "l4" || lost != 0 {
		t.Errorf("Since(4) = %q lost %d", got, lost)
	}
	lines, _, _ := since(r, 3)
	if !lines[0].Stderr || lines[1].Stderr || lines[0].Container != "web" || lines[1].Time.Before(lines[0].Time) {
		t.Errorf("stream, name or time wrong: %+v", lines)
	}
	// A line copied in is not the writer's buffer.
	buf := []byte("mutable")
	r.add(false, buf)
	buf[0] = 'X'
	if got, _, _ := ringLines(r, 5); got != "mutable" {
		t.Errorf("kept %q", got)
	}
}

func TestLogRingResize(t *testing.T) {
	r := NewRing("web", 4)
	for i := range 6 {
		r.add(false, fmt.Appendf(nil, "l%d", i))
	}
	r.Resize(2)
	if got, _, lost := ringLines(r, 0); got != "l4,l5" || lost != 4 {
		t.Errorf("after shrinking: %q lost %d", got, lost)
	}
	r.Resize(5)
	r.add(false, []byte("l6"))
	if got, _, _ := ringLines(r, 0); got != "l4,l5,l6" {
		t.Errorf("after growing: %q", got)
	}
	r.Resize(0)
	r.add(false, []byte("l7"))
	if got, next, _ := ringLines(r, 0); got != "" || next != 7 {
		t.Errorf("keep 0: %q next %d", got, next)
	}
}

// The slots are allocated as lines come: a quiet container costs a few, and the ring
// keeps the same lines as one allocated whole, across growth, wrapping and resizing
// (an empty ring resized, then filled from the middle of its slots).
func TestLogRingGrowsAsLinesCome(t *testing.T) {
	r := NewRing("web", 1000)
	r.add(false, []byte("one"))
	if len(r.slots) > minSlots {
		t.Errorf("one line took %d slots, want at most %d", len(r.slots), minSlots)
	}
	for _, keep := range []int{1, 5, 16, 17, 100} {
		for _, lines := range []int{0, 3, keep - 1, keep, keep + 1, 3*keep + 7} {
			r := NewRing("web", keep)
			var want []string
			for i := range lines {
				r.add(false, fmt.Appendf(nil, "l%d", i))
				want = append(want, fmt.Sprintf("l%d", i))
			}
			want = want[max(0, len(want)-keep):]
			if got, _, _ := ringLines(r, 0); got != strings.Join(want, ",") {
				t.Errorf("keep %d, %d lines: %q, want %q", keep, lines, got, strings.Join(want, ","))
			}
			if len(r.slots) > keep {
				t.Errorf("keep %d: %d slots", keep, len(r.slots))
			}
		}
	}
	r = NewRing("web", 10)
	for i := range 7 {
		r.add(false, fmt.Appendf(nil, "l%d", i))
	}
	r.Resize(0)
	r.Resize(4) // empty, and the next line is number 7: slot 3
	for i := 7; i < 13; i++ {
		r.add(false, fmt.Appendf(nil, "l%d", i))
	}
	if got, _, _ := ringLines(r, 0); got != "l9,l10,l11,l12" {
		t.Errorf("resized empty ring: %q, want l9,l10,l11,l12", got)
	}
}

func TestLineWriterFillsTheRing(t *testing.T) {
	r := NewRing("web", 100) // 100 KiB: room for a 64 KiB piece
	w := NewLineWriter("web", nil, nil).WithRing(r, true)
	w.Write([]byte("one\ntw"))
	w.Write([]byte("o\n" + strings.Repeat("x", MaxLine+3)))
	w.Flush()
	lines, _, _ := since(r, 0)
	if len(lines) != 4 || lines[0].Line != "one" || lines[1].Line != "two" || len(lines[2].Line) != MaxLine || lines[3].Line != "xxx" || !lines[0].Stderr {
		t.Errorf("kept %d lines", len(lines))
	}
}

// Long lines: the ring keeps keep × BytesPerKeptLine bytes of them, not keep × 64 KiB.
func TestLogRingByteBudget(t *testing.T) {
	r := NewRing("web", 100)
	long := []byte(strings.Repeat("x", MaxLine))
	for range 300 {
		r.add(false, long)
	}
	lines, _, _ := since(r, 0)
	if want := 100 * BytesPerKeptLine / MaxLine; len(lines) != want {
		t.Errorf("kept %d lines of 64 KiB, want %d", len(lines), want)
	}
	if r.bytes > r.budget {
		t.Errorf("holds %d bytes, budget %d", r.bytes, r.budget)
	}
	// Short lines again: the big buffers go, all 100 lines fit.
	for i := range 100 {
		r.add(false, fmt.Appendf(nil, "s%d", i))
	}
	if lines, _, _ := since(r, 0); len(lines) != 100 || lines[0].Line != "s0" || r.bytes > 100*16 {
		t.Errorf("kept %d short lines in %d bytes", len(lines), r.bytes)
	}
	// A line longer than the whole budget is kept alone.
	small := NewRing("web", 1)
	small.add(false, long)
	if lines, _, _ := since(small, 0); len(lines) != 1 {
		t.Errorf("a ring of 1 kept %d lines of 64 KiB", len(lines))
	}
}

func TestLogRingWakesWithoutBlocking(t *testing.T) {
	r := NewRing("web", 10)
	wake := make(chan struct{}, 1)
	stop := r.Watch(wake)
	r.add(false, []byte("a"))
	r.add(false, []byte("b")) // nobody reads wake: must not block
	<-wake
	stop()
	r.add(false, []byte("c"))
	select {
	case <-wake:
		t.Error("woken after stop")
	default:
	}
}

// BenchmarkLineWriterRing is the cost the ring adds per line: run with and without it
// (docs/reference.md "Logs" quotes the numbers). A full ring allocates nothing per line.
func BenchmarkLineWriterRing(b *testing.B) {
	line := []byte(strings.Repeat("x", 99) + "\n")
	for _, keep := range []int{-1, 1000} {
		b.Run(fmt.Sprintf("keep=%d", keep), func(b *testing.B) {
			w := NewLineWriter("web", nil, nil)
			if keep >= 0 {
				w.WithRing(NewRing("web", keep), false)
			}
			for range 2 * 1000 { // fill the ring: the steady state
				w.Write(line)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				w.Write(line)
			}
		})
	}
}

// Read copies a bounded batch: lines until the next would pass maxBytes, at least one
// however long; Times gives the kept lines' times without their text.
func TestLogRingReadsInBatches(t *testing.T) {
	r := NewRing("web", 10)
	for i := range 6 {
		r.add(false, []byte(strings.Repeat(fmt.Sprint(i), 10)))
	}
	for _, tt := range []struct {
		from     uint64
		maxBytes int
		want     int
		next     uint64
	}{
		{0, 25, 2, 2}, {0, 30, 3, 3}, {0, 5, 1, 1}, {4, 100, 2, 6}, {6, 100, 0, 6},
	} {
		lines, next, lost := r.Read(nil, tt.from, tt.maxBytes)
		if len(lines) != tt.want || next != tt.next || lost != 0 {
			t.Errorf("Read(%d, %d) = %d lines, next %d, lost %d; want %d, %d, 0", tt.from, tt.maxBytes, len(lines), next, lost, tt.want, tt.next)
		}
	}
	small := NewRing("web", 2)
	for i := range 5 {
		small.add(false, fmt.Appendf(nil, "l%d", i))
	}
	if lines, next, lost := small.Read(nil, 1, 100); len(lines) != 2 || lines[0].Line != "l3" || next != 5 || lost != 2 {
		t.Errorf("Read past the kept lines: %+v next %d lost %d", lines, next, lost)
	}
	if times, first := small.Times(0); len(times) != 2 || first != 3 || times[1] < times[0] {
		t.Errorf("Times(0) = %v from %d, want 2 times from 3", times, first)
	}
}
