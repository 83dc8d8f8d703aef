package revisions

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// TestStep is the state machine of one revision: install → activate → ready, or
// rollback, with the events that arrive too late ignored.
func TestStep(t *testing.T) {
	installing := Revision{ID: "v2", Phase: Installing}
	installed := Revision{ID: "v2", Phase: Installed}
	active := Revision{ID: "v2", Phase: Active, ActivatedAt: at(0)}
	activeReady := Revision{ID: "v2", Phase: Active, ActivatedAt: at(0), ReadySeen: true, Stable: true}
	byRollback := Revision{ID: "v1", Phase: Active, ActivatedAt: at(0), ByRollback: true}
	rolledBack := Revision{ID: "v2", Phase: RolledBack, Why: "web: not ready"}
	tests := []struct {
		name      string
		rev       Revision
		ev        Event
		wantPhase Phase
		wantAct   Action
		check     func(Revision) bool
	}{
		{name: "installed, activate: auto → installed, activate it", rev: installing, ev: Event{Kind: InstallSucceeded, Auto: true}, wantPhase: Installed, wantAct: Activate},
		{name: "installed, activate: manual → installed, waits", rev: installing, ev: Event{Kind: InstallSucceeded}, wantPhase: Installed, wantAct: Nothing},
		{name: "install failed → InstallFailed with why", rev: installing, ev: Event{Kind: InstallFailedEvent, Why: "resource x: 404"}, wantPhase: InstallFailed,
			check: func(r Revision) bool { return r.Why == "resource x: 404" }},
		{name: "activation → active, not yet ready", rev: installed, ev: Event{Kind: ActivationBegan, At: at(5)}, wantPhase: Active,
			check: func(r Revision) bool { return r.ActivatedAt.Equal(at(5)) && !r.ReadySeen && !r.ByRollback }},
		{name: "activation of a rolled-back one by tend activate → active again", rev: rolledBack, ev: Event{Kind: ActivationBegan, At: at(5)}, wantPhase: Active,
			check: func(r Revision) bool { return r.Why == "" }},
		{name: "activation by a rollback is marked", rev: installed, ev: Event{Kind: ActivationBegan, At: at(5), ByRollback: true}, wantPhase: Active,
			check: func(r Revision) bool { return r.ByRollback }},
		{name: "ready while active → stable", rev: active, ev: Event{Kind: BecameReady, At: at(3)}, wantPhase: Active,
			check: func(r Revision) bool { return r.Stable && r.ReadySeen }},
		{name: "deadline, never ready → rollback", rev: active, ev: Event{Kind: Deadline}, wantPhase: Active, wantAct: Rollback},
		{name: "deadline, was ready → nothing", rev: activeReady, ev: Event{Kind: Deadline}, wantPhase: Active, wantAct: Nothing},
		{name: "deadline of one activated by a rollback → nothing", rev: byRollback, ev: Event{Kind: Deadline}, wantPhase: Active, wantAct: Nothing},
		{name: "deadline of an inactive one (late timer) → nothing", rev: installed, ev: Event{Kind: Deadline}, wantPhase: Installed, wantAct: Nothing},
		{name: "rolled back → RolledBack with why", rev: active, ev: Event{Kind: RolledBackEvent, At: at(9), Why: "web: not ready"}, wantPhase: RolledBack,
			check: func(r Revision) bool { return r.Why == "web: not ready" && r.LastActiveAt.Equal(at(9)) }},
		{name: "deactivated → installed, last active now", rev: activeReady, ev: Event{Kind: Deactivated, At: at(7)}, wantPhase: Installed,
			check: func(r Revision) bool { return r.LastActiveAt.Equal(at(7)) && r.Stable }},
		{name: "ready of an inactive one (late) → nothing", rev: installed, ev: Event{Kind: BecameReady}, wantPhase: Installed,
			check: func(r Revision) bool { return !r.Stable }},
		{name: "install result of an installed one (late) → nothing", rev: installed, ev: Event{Kind: InstallFailedEvent, Why: "x"}, wantPhase: Installed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, act := Step(tt.rev, tt.ev)
			if got.Phase != tt.wantPhase || act != tt.wantAct {
				t.Errorf("Step = phase %s, action %d; want %s, %d", got.Phase, act, tt.wantPhase, tt.wantAct)
			}
			if tt.check != nil && !tt.check(got) {
				t.Errorf("Step = %+v: check failed", got)
			}
		})
	}
}

// TestAdmit: the active revision's id and content is nothing new; an inactive one's
// is activated again; a failed install is retried; other content under a known id is
// refused; a rolled-back one is held back.
func TestAdmit(t *testing.T) {
	l := &List{}
	l.Add(&Revision{ID: "v1", Content: "a", Phase: Active})
	l.Add(&Revision{ID: "v2", Content: "b", Phase: InstallFailed})
	l.Add(&Revision{ID: "v3", Content: "c", Phase: RolledBack})
	l.Add(&Revision{ID: "v4", Content: "d", Phase: Installed})
	for _, tt := range []struct {
		id, content string
		want        Verdict
	}{
		{"v9", "z", New},
		{"v1", "a", Unchanged},
		{"v1", "other", Conflict},
		{"v2", "b", Retry},
		{"v3", "c", HeldBack},
		{"v3", "d", Conflict},
		{"v4", "d", Reactivate},
	} {
		if got := Admit(l, tt.id, tt.content); got != tt.want {
			t.Errorf("Admit(%s, %s) = %d, want %d", tt.id, tt.content, got, tt.want)
		}
	}
}

// TestLastStable: of the others that were ready while active, the one active most
// recently; rolled-back and never-ready ones are not candidates.
func TestLastStable(t *testing.T) {
	l := &List{}
	l.Add(&Revision{ID: "old", Phase: Installed, Stable: true, LastActiveAt: at(1)})
	l.Add(&Revision{ID: "recent", Phase: Installed, Stable: true, LastActiveAt: at(5)})
	l.Add(&Revision{ID: "never-ready", Phase: Installed, LastActiveAt: at(8)})
	l.Add(&Revision{ID: "bad", Phase: RolledBack, Stable: true, LastActiveAt: at(9)})
	l.Add(&Revision{ID: "cur", Phase: Active, Stable: false})
	if got := LastStable(l, "cur"); got == nil || got.ID != "recent" {
		t.Errorf("LastStable = %v, want recent", got)
	}
	if got := LastStable(&List{revs: []*Revision{{ID: "cur", Phase: Active}}}, "cur"); got != nil {
		t.Errorf("LastStable with no other = %v, want nil", got)
	}
}

// TestPrune: beyond keep, the least recently active go first, never-active ones
// (oldest first) before them; never the active one, one installing, a failed install
// or the one just installed.
func TestPrune(t *testing.T) {
	l := &List{}
	l.Add(&Revision{ID: "a", Phase: Installed, CreatedAt: at(1), LastActiveAt: at(10)})
	l.Add(&Revision{ID: "b", Phase: Installed, CreatedAt: at(2), LastActiveAt: at(30)})
	l.Add(&Revision{ID: "n1", Phase: Installed, CreatedAt: at(3)})
	l.Add(&Revision{ID: "n2", Phase: Installed, CreatedAt: at(4)})
	l.Add(&Revision{ID: "c", Phase: RolledBack, CreatedAt: at(5), LastActiveAt: at(20)})
	l.Add(&Revision{ID: "failed", Phase: InstallFailed, CreatedAt: at(6)})
	l.Add(&Revision{ID: "inst", Phase: Installing, CreatedAt: at(7)})
	l.Add(&Revision{ID: "act", Phase: Active, CreatedAt: at(8)})
	for _, tt := range []struct {
		keep    int
		protect string
		want    []string
	}{
		{keep: 5, want: nil},
		{keep: 2, want: []string{"n1", "n2", "a"}},
		{keep: 0, want: []string{"n1", "n2", "a", "c", "b"}},
		{keep: 2, protect: "n2", want: []string{"n1", "a", "c"}},
		{keep: 0, protect: "n2", want: []string{"n1", "a", "c", "b"}},
	} {
		if got := Prune(l, tt.keep, tt.protect); !slices.Equal(got, tt.want) {
			t.Errorf("Prune(keep %d, protect %q) = %v, want %v", tt.keep, tt.protect, got, tt.want)
		}
	}
}
