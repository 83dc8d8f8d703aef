// Package revisions owns an instance's revisions: the list with each one's
// conditions, the pure decisions over it (is a given spec new, is a rollback due and
// to which revision, what to prune) and the store on disk, <instance.dir>/.tend/.
// The supervisor carries the decisions out with its reload mechanics; nothing here
// starts a process or a goroutine.
package revisions

import (
	"slices"
	"time"

	"github.com/tend-sh/tend/status"
)

// Sources of a revision.
const (
	SourceFile = "file" // the spec file, at start or at a reload
	SourceAPI  = "api"  // tend apply, PUT /v1/revisions/ID
)

// Revision is one revision of the instance (docs/reference.md "Updates and rollback").
type Revision struct {
	ID      string `json:"id"`
	Source  string `json:"source"`
	Content string `json:"content"` // digest of what it was made from: a known id with other content is refused
	// Name is the file name the spec was read from (its format is told by it).
	Name string `json:"name"`

	CreatedAt    time.Time `json:"created_at"`
	ActivatedAt  time.Time `json:"activated_at,omitzero"`   // when its last activation began
	LastActiveAt time.Time `json:"last_active_at,omitzero"` // when it was last active (now while active)

	Phase Phase `json:"phase"`
	// Stable: it was ready while active (a rollback may go back to it).
	Stable bool `json:"stable"`
	// ByRollback: a rollback activated it, so it is not itself rolled back.
	ByRollback bool `json:"by_rollback,omitempty"`
	// Why is the message of InstallFailed or RolledBack.
	Why string `json:"why,omitempty"`
	// ReadySeen: ready at least once since its activation began.
	ReadySeen bool `json:"-"`

	DiskBytes int64 `json:"disk_bytes"`

	installedAt time.Time // when the installed condition last changed
	readyAt     time.Time
}

// Phase is where a revision stands (the state machine of machine.go).
type Phase string

// The phases of a revision.
const (
	Installing    Phase = "installing"
	InstallFailed Phase = "install_failed"
	Installed     Phase = "installed"   // inactive, in its store
	Active        Phase = "active"      // the one that should run
	RolledBack    Phase = "rolled_back" // installed, not ready in time: a reload does not activate it again
)

// List is every revision of an instance, oldest first; at most one is Active.
// Its owner serialises access (the supervisor's main loop, under its lock).
type List struct {
	revs []*Revision
}

// Get returns the revision id, or nil.
func (l *List) Get(id string) *Revision {
	for _, r := range l.revs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Active returns the active revision, or nil.
func (l *List) Active() *Revision {
	for _, r := range l.revs {
		if r.Phase == Active {
			return r
		}
	}
	return nil
}

// All returns the revisions, oldest first.
func (l *List) All() []*Revision { return slices.Clone(l.revs) }

// Add appends r (a new id) or replaces the failed revision with r's id.
func (l *List) Add(r *Revision) {
	if i := slices.IndexFunc(l.revs, func(o *Revision) bool { return o.ID == r.ID }); i >= 0 {
		l.revs[i] = r
		return
	}
	l.revs = append(l.revs, r)
}

// Remove drops the revision id from the list.
func (l *List) Remove(id string) {
	l.revs = slices.DeleteFunc(l.revs, func(r *Revision) bool { return r.ID == id })
}

// Status is the list as the status document shows it, newest first; ready is the
// instance's ready condition, the active revision's own.
func (l *List) Status(ready status.Condition) []status.Revision {
	out := make([]status.Revision, 0, len(l.revs))
	for i := len(l.revs) - 1; i >= 0; i-- {
		r := l.revs[i]
		st := status.Revision{
			ID: r.ID, Active: r.Phase == Active, Source: r.Source,
			CreatedAt: status.At(r.CreatedAt), DiskBytes: r.DiskBytes,
		}
		if !r.ActivatedAt.IsZero() {
			at := status.At(r.ActivatedAt)
			st.ActivatedAt = &at
		}
		installedAt := r.installedAt
		if installedAt.IsZero() {
			installedAt = r.CreatedAt
		}
		switch r.Phase {
		case Installing:
			st.Installed = status.NewCondition(false, status.ReasonInstalling, "", installedAt)
		case InstallFailed:
			st.Installed = status.NewCondition(false, status.ReasonInstallFailed, r.Why, installedAt)
		default:
			st.Installed = status.NewCondition(true, status.ReasonInstalled, "", installedAt)
		}
		readyAt := r.readyAt
		if readyAt.IsZero() {
			readyAt = installedAt
		}
		switch r.Phase {
		case Active:
			st.Ready = ready
			if !r.ReadySeen && ready.True() {
				// The switch is under way: the ready condition is still the old
				// containers'.
				st.Ready = status.NewCondition(false, status.ReasonActivating, "", readyAt)
			}
		case RolledBack:
			st.Ready = status.NewCondition(false, status.ReasonRolledBack, r.Why, readyAt)
		default:
			st.Ready = status.NewCondition(false, status.ReasonInactive, "", readyAt)
		}
		out = append(out, st)
	}
	return out
}
