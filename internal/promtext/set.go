package promtext

import (
	"bytes"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is a count that only goes up; safe for concurrent use.
type Counter struct{ n atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Get returns the count.
func (c *Counter) Get() uint64 { return c.n.Load() }

// HistogramBuckets are the upper bounds (seconds) of every Histogram's buckets:
// Prometheus' default ones, 5 ms to 10 s.
var HistogramBuckets = [...]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Histogram counts observations into HistogramBuckets, written as Prometheus' le
// buckets (cumulative, then +Inf) with _sum and _count; safe for concurrent use.
type Histogram struct {
	mu     sync.Mutex
	counts [len(HistogramBuckets)]uint64 // observations in (previous bound, bound]
	sum    float64
	count  uint64
}

// Update records v; negative values and NaN are ignored.
func (h *Histogram) Update(v float64) {
	if math.IsNaN(v) || v < 0 {
		return
	}
	i, _ := slices.BinarySearch(HistogramBuckets[:], v) // the first bound ≥ v
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sum += v
	h.count++
	if i < len(h.counts) {
		h.counts[i]++
	}
}

// write writes the samples of series name{labels}.
func (h *Histogram) write(w io.Writer, series string) {
	name, labels := series, ""
	if i := strings.IndexByte(series, '{'); i >= 0 {
		name, labels = series[:i], strings.TrimSuffix(series[i+1:], "}")
	}
	h.mu.Lock()
	counts, sum, count := h.counts, h.sum, h.count
	h.mu.Unlock()
	withLabels := func(extra string) string {
		if labels == "" {
			return extra
		}
		if extra == "" {
			return "{" + labels + "}"
		}
		return "{" + labels + "," + extra[1:]
	}
	var cumulative uint64
	for i, bound := range HistogramBuckets {
		cumulative += counts[i]
		Uint(w, name+"_bucket"+withLabels(`{le="`+strconv.FormatFloat(bound, 'g', -1, 64)+`"}`), cumulative)
	}
	Uint(w, name+"_bucket"+withLabels(`{le="+Inf"}`), count)
	Float(w, name+"_sum"+withLabels(""), sum)
	Uint(w, name+"_count"+withLabels(""), count)
}

// Set holds the live series of one metric family, by series name (the family's name
// with its labels: `name{a="x",b="y"}`); safe for concurrent use.
type Set struct {
	mu         sync.Mutex
	counters   map[string]*Counter
	histograms map[string]*Histogram
}

// Counter returns the counter of series, made on first use.
func (s *Set) Counter(series string) *Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counters == nil {
		s.counters = map[string]*Counter{}
	}
	c := s.counters[series]
	if c == nil {
		c = &Counter{}
		s.counters[series] = c
	}
	return c
}

// Histogram returns the histogram of series, made on first use.
func (s *Set) Histogram(series string) *Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.histograms == nil {
		s.histograms = map[string]*Histogram{}
	}
	h := s.histograms[series]
	if h == nil {
		h = &Histogram{}
		s.histograms[series] = h
	}
	return h
}

// Write writes the samples of every series, sorted by series name (a stable order for
// scrapes and diffs). It writes into a buffer first, so that a slow reader never
// holds the lock that checks take to find their series.
func (s *Set) Write(w io.Writer) {
	s.mu.Lock()
	counters, histograms := maps.Clone(s.counters), maps.Clone(s.histograms)
	s.mu.Unlock()
	var b bytes.Buffer
	for _, series := range sortedKeys(counters) {
		Uint(&b, series, counters[series].Get())
	}
	for _, series := range sortedKeys(histograms) {
		histograms[series].write(&b, series)
	}
	w.Write(b.Bytes())
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
