// Package resources puts an instance's files in place: static resources
// (docs/reference.md "Resources") are downloaded, verified, optionally extracted and re-verified on a schedule, and
// dynamic resources keep revisions in a storage directory behind a symlink that
// is switched, announced to the containers, verified and rolled back.
package resources

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
)

// Options tune fetching. They are not spec fields; DefaultOptions holds the values
// tend runs with and tests shrink them.
type Options struct {
	Log zerolog.Logger
	// Changed is called (without locks held) whenever a status entry changed.
	Changed func()
	// Cgroup is the cgroup of the named container, where its notify actions start
	// (docs/reference.md "Cgroups and limits"); nil, or a nil answer: tend's own.
	Cgroup func(container string) *proc.Cgroup
	// ConnectTimeout bounds establishing a connection; IdleTimeout is how long a
	// download may go without receiving a byte (headers included) before the attempt
	// fails.
	ConnectTimeout time.Duration
	IdleTimeout    time.Duration
	// Retry is the jittered backoff between rounds over all URLs.
	Retry restart.Policy
	// ReloadRounds is how many rounds over all URLs a reload tries before it gives up
	// and leaves the previous file or revision in place; preparing and re-fetching
	// after a failed re-verification retry until their context ends.
	ReloadRounds int
	// ProgressEvery is the least time between two progress log lines of one download;
	// downloads shorter than ProgressAfter log none.
	ProgressEvery time.Duration
	ProgressAfter time.Duration
	// MaxExtractRatio and MinExtractBound bound what an archive may unpack to:
	// max(MinExtractBound, MaxExtractRatio × archive size) bytes, MaxExtractEntries
	// entries and MaxExtractNameBytes bytes of entry names and link targets (which
	// bounds the memory extraction takes). Anything beyond is an archive bomb and is
	// rejected.
	MaxExtractRatio     int64
	MinExtractBound     int64
	MaxExtractEntries   int
	MaxExtractNameBytes int64
	// BadArchiveRetry is the least time before an archive rejected as unsafe is
	// fetched again while preparing or after a failed re-verification: the same
	// bytes would be rejected again. A reload does not retry it.
	BadArchiveRetry time.Duration
	// Stored lists files kept elsewhere (the stores of kept revisions) that should
	// hold checksum sum: a resource with it is copied from the first that still
	// verifies instead of fetched. nil: none.
	Stored func(sum Checksum) []string
}

// DefaultOptions are the options tend runs with.
func DefaultOptions() Options {
	return Options{
		Log:            zerolog.Nop(),
		Changed:        func() {},
		ConnectTimeout: 10 * time.Second,
		IdleTimeout:    60 * time.Second,
		Retry: restart.Policy{
			MinPeriod: time.Second,
			MaxPeriod: 60 * time.Second,
			Backoff:   2,
			MaxJitter: time.Second,
		},
		ReloadRounds:        3,
		ProgressEvery:       5 * time.Second,
		ProgressAfter:       time.Second,
		MaxExtractRatio:     100,
		MinExtractBound:     1 << 30,
		MaxExtractEntries:   1_000_000,
		MaxExtractNameBytes: 64 << 20,
		BadArchiveRetry:     10 * time.Minute,
	}
}
