package restart

// MemorySamples is how many usage samples in a row above memory_restart restart a
// run: one sample above (a short spike) is not enough.
const MemorySamples = 3

// MemoryWatch applies memory_restart to one run's samples; the zero value with a
// Limit is a fresh run's.
type MemoryWatch struct {
	Limit int64 // memory_restart in bytes; 0: none
	Above int   // samples in a row above Limit
}

// Observe takes a sample's memory and reports whether it is the MemorySamples-th in
// a row above the limit: then the run is stopped and started again (StoppedToRestart).
// One at or below the limit starts the count again.
func (m *MemoryWatch) Observe(bytes int64) bool {
	if m.Limit <= 0 || bytes <= m.Limit {
		m.Above = 0
		return false
	}
	m.Above++
	return m.Above >= MemorySamples
}
