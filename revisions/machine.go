package revisions

import (
	"cmp"
	"slices"
	"time"
)

// Verdict is what to do with a spec given to the instance (a reload of the file, an
// apply), by its id and content.
type Verdict int

// The verdicts of Admit.
const (
	New        Verdict = iota // an unknown id: install it
	Unchanged                 // the active revision's id and content: nothing new (the reload retries what failed)
	Reactivate                // an inactive installed revision's id and content: activate it from its store
	Retry                     // a known id with the same content whose install failed: install it again
	Conflict                  // a known id with other content: refused
	HeldBack                  // a known id with the same content that was rolled back: only tend activate ID activates it
)

// Admit judges a spec with id and content against the list.
func Admit(l *List, id, content string) Verdict {
	r := l.Get(id)
	switch {
	case r == nil:
		return New
	case r.Content != content:
		return Conflict
	case r.Phase == InstallFailed:
		return Retry
	case r.Phase == RolledBack:
		return HeldBack
	case r.Phase == Active:
		return Unchanged
	}
	return Reactivate
}

// EventKind is what happened to a revision.
type EventKind int

// The events of a revision's state machine.
const (
	InstallSucceeded EventKind = iota
	InstallFailedEvent
	ActivationBegan // it becomes the active revision (ByRollback: a rollback chose it)
	BecameReady     // the instance was ready while it was active
	Deadline        // rollback_after passed since its activation began
	Deactivated     // another revision became active
	RolledBackEvent // the rollback it asked for switched to another revision (Why says why)
)

// Event is one thing that happened to a revision.
type Event struct {
	Kind       EventKind
	At         time.Time
	Auto       bool   // InstallSucceeded: activate: auto
	ByRollback bool   // ActivationBegan
	Why        string // InstallFailedEvent, RolledBackEvent
}

// Action is what the owner of the list does after a step.
type Action int

// The actions of Step.
const (
	Nothing  Action = iota
	Activate        // activate this revision now (installed, activate: auto)
	Rollback        // switch to the last stable revision (LastStable), then RolledBackEvent
)

// Step is a revision's state machine: the revision after ev, and what to do. An
// event that does not apply to the revision's phase (a timer that fired late, a
// ready of a revision no longer active) changes nothing.
func Step(r Revision, ev Event) (Revision, Action) {
	switch ev.Kind {
	case InstallSucceeded:
		if r.Phase == Installing {
			r.Phase, r.Why, r.installedAt = Installed, "", ev.At
			if ev.Auto {
				return r, Activate
			}
		}
	case InstallFailedEvent:
		if r.Phase == Installing {
			r.Phase, r.Why, r.installedAt = InstallFailed, ev.Why, ev.At
		}
	case ActivationBegan:
		switch r.Phase {
		case Installed, RolledBack, Active:
			r.Phase, r.Why = Active, ""
			r.ActivatedAt, r.LastActiveAt, r.readyAt = ev.At, ev.At, ev.At
			r.ReadySeen, r.ByRollback = false, ev.ByRollback
		}
	case BecameReady:
		if r.Phase == Active {
			r.ReadySeen, r.Stable, r.LastActiveAt = true, true, ev.At
		}
	case Deadline:
		if r.Phase == Active && !r.ReadySeen && !r.ByRollback {
			return r, Rollback
		}
	case Deactivated:
		if r.Phase == Active {
			r.Phase, r.LastActiveAt, r.readyAt = Installed, ev.At, ev.At
		}
	case RolledBackEvent:
		if r.Phase == Active || r.Phase == Installed {
			r.Phase, r.Why, r.LastActiveAt, r.readyAt = RolledBack, ev.Why, ev.At, ev.At
		}
	}
	return r, Nothing
}

// Apply runs Step on the revision id of l and stores the result; an unknown id is
// Nothing.
func (l *List) Apply(id string, ev Event) Action {
	r := l.Get(id)
	if r == nil {
		return Nothing
	}
	next, act := Step(*r, ev)
	*r = next
	return act
}

// LastStable is the revision a rollback from the revision except goes back to: of
// the other installed revisions that were ready while active, the one active most
// recently; nil when there is none.
func LastStable(l *List, except string) *Revision {
	var best *Revision
	for _, r := range l.revs {
		if r.ID == except || !r.Stable || r.Phase != Installed {
			continue
		}
		if best == nil || r.LastActiveAt.After(best.LastActiveAt) {
			best = r
		}
	}
	return best
}

// Prune lists the revisions to remove so that at most keep inactive installed ones
// remain: the least recently active first, never-active ones (oldest first) before
// them. The active revision, one installing and protect (the one just installed) are
// never listed; neither are failed installs, which do not count.
func Prune(l *List, keep int, protect string) []string {
	var inactive []*Revision
	for _, r := range l.revs {
		if (r.Phase == Installed || r.Phase == RolledBack) && r.ID != protect {
			inactive = append(inactive, r)
		}
	}
	if protect != "" {
		if r := l.Get(protect); r != nil && (r.Phase == Installed || r.Phase == RolledBack) {
			keep-- // it counts, but stays
		}
	}
	keep = max(keep, 0)
	if len(inactive) <= keep {
		return nil
	}
	slices.SortStableFunc(inactive, func(a, b *Revision) int {
		if c := a.LastActiveAt.Compare(b.LastActiveAt); c != 0 {
			return c // the zero time (never active) sorts first
		}
		return cmp.Compare(a.CreatedAt.UnixNano(), b.CreatedAt.UnixNano())
	})
	var ids []string
	for _, r := range inactive[:len(inactive)-keep] {
		ids = append(ids, r.ID)
	}
	return ids
}
