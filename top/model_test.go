package top

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tend-sh/tend/status"
)

// TestKeys: what each key does on each screen, from the table with web selected
// (web, worker, metrics-exporter; worker stopped where a row says so).
func TestKeys(t *testing.T) {
	stoppedWorker := func(d *status.Document) { d.Containers[1].State, d.Containers[1].Pid = status.Stopped, nil }
	cases := []struct {
		name       string
		change     func(*status.Document)
		keys       []string
		screen     screen
		sel        string // the selected container after the keys
		question   *confirm
		note       string
		lastEffect *effect // of the last key; nil: none
	}{
		{name: "the selection starts on the first row", keys: nil, screen: tableScreen, sel: "web"},
		{name: "j and ↓ move down", keys: []string{"j", "down"}, screen: tableScreen, sel: "metrics-exporter"},
		{name: "the selection stops at the last row", keys: []string{"j", "j", "j", "down"}, screen: tableScreen, sel: "metrics-exporter"},
		{name: "k and ↑ move up", keys: []string{"j", "j", "k"}, screen: tableScreen, sel: "worker"},
		{name: "the selection stops at the first row", keys: []string{"up", "k"}, screen: tableScreen, sel: "web"},
		{name: "Enter describes the selected container and reads it now", keys: []string{"j", "enter"}, screen: describeScreen, sel: "worker", lastEffect: &effect{kind: effFetch}},
		{name: "Esc goes back from describe", keys: []string{"enter", "esc"}, screen: tableScreen, sel: "web"},
		{name: "l follows the selected container's logs", keys: []string{"j", "l"}, screen: logsScreen, sel: "worker", lastEffect: &effect{kind: effLogs, target: "worker"}},
		{name: "l from describe follows its logs", keys: []string{"enter", "l"}, screen: logsScreen, sel: "web", lastEffect: &effect{kind: effLogs, target: "web"}},
		{name: "Esc leaves the logs and stops following", keys: []string{"l", "esc"}, screen: tableScreen, sel: "web", lastEffect: &effect{kind: effLogsClose}},
		{name: "/ types a search; q is part of it", keys: []string{"l", "/", "q"}, screen: logsScreen, sel: "web"},
		{name: "Esc drops the search, not the logs", keys: []string{"l", "/", "x", "enter", "esc"}, screen: logsScreen, sel: "web"},
		{name: "r restarts at once", keys: []string{"r"}, screen: tableScreen, sel: "web", note: "restart web ...", lastEffect: &effect{kind: effAct, action: Restart, target: "web"}},
		{name: "s asks before stopping", keys: []string{"s"}, screen: tableScreen, sel: "web", question: &confirm{action: Stop, target: "web"}},
		{name: "s then y stops", keys: []string{"s", "y"}, screen: tableScreen, sel: "web", note: "stop web ...", lastEffect: &effect{kind: effAct, action: Stop, target: "web"}},
		{name: "s then n does nothing", keys: []string{"s", "n"}, screen: tableScreen, sel: "web", note: "stop web: cancelled"},
		{name: "s then Esc does nothing", keys: []string{"s", "esc"}, screen: tableScreen, sel: "web", note: "stop web: cancelled"},
		{name: "s on a stopped container asks to start it", change: stoppedWorker, keys: []string{"j", "s", "y"}, screen: tableScreen, sel: "worker", note: "start worker ...", lastEffect: &effect{kind: effAct, action: Start, target: "worker"}},
		{name: "v lists the revisions", keys: []string{"v"}, screen: revisionsScreen, sel: "web"},
		{name: "a asks to activate the selected revision", keys: []string{"v", "j", "a"}, screen: revisionsScreen, sel: "web", question: &confirm{action: Activate, target: "v41"}},
		{name: "a then y activates it", keys: []string{"v", "j", "a", "y"}, screen: revisionsScreen, sel: "web", note: "activate v41 ...", lastEffect: &effect{kind: effAct, action: Activate, target: "v41"}},
		{name: "b then y rolls back", keys: []string{"v", "b", "y"}, screen: revisionsScreen, sel: "web", note: "rollback ...", lastEffect: &effect{kind: effAct, action: Rollback}},
		{name: "b then n does not", keys: []string{"v", "b", "n"}, screen: revisionsScreen, sel: "web", note: "rollback: cancelled"},
		{name: "? shows the help, Esc goes back where it was", keys: []string{"v", "?", "esc"}, screen: revisionsScreen, sel: "web"},
		{name: "? on the help goes back too", keys: []string{"?", "?"}, screen: tableScreen, sel: "web"},
		{name: "q quits from the table", keys: []string{"q"}, screen: tableScreen, sel: "web", lastEffect: &effect{kind: effQuit}},
		{name: "q quits from the logs", keys: []string{"l", "q"}, screen: logsScreen, sel: "web", lastEffect: &effect{kind: effQuit}},
		{name: "q quits from describe", keys: []string{"enter", "q"}, screen: describeScreen, sel: "web", lastEffect: &effect{kind: effQuit}},
		{name: "q answers no to a question", keys: []string{"s", "q"}, screen: tableScreen, sel: "web", note: "stop web: cancelled"},
		{name: "Ctrl-C quits even while typing a search", keys: []string{"l", "/", "ctrl+c"}, screen: logsScreen, sel: "web", lastEffect: &effect{kind: effQuit}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := model(document(c.change))
			var last []effect
			for _, k := range c.keys {
				last = m.key(k)
			}
			if m.screen != c.screen {
				t.Errorf("screen %d, want %d", m.screen, c.screen)
			}
			if got := m.selectedName(); got != c.sel {
				t.Errorf("selected %q, want %q", got, c.sel)
			}
			if !reflect.DeepEqual(m.question, c.question) {
				t.Errorf("question %+v, want %+v", m.question, c.question)
			}
			if m.note != c.note {
				t.Errorf("note %q, want %q", m.note, c.note)
			}
			var want []effect
			if c.lastEffect != nil {
				want = []effect{*c.lastEffect}
			}
			if !reflect.DeepEqual(last, want) {
				t.Errorf("effects of the last key %+v, want %+v", last, want)
			}
		})
	}
}

// TestSelectionFollowsItsContainer: a status read that reorders or removes
// containers keeps the selection on its container, or on the first row.
func TestSelectionFollowsItsContainer(t *testing.T) {
	m := model(document(nil))
	m.key("j") // worker
	d := document(func(d *status.Document) { d.Containers[0], d.Containers[1] = d.Containers[1], d.Containers[0] })
	m.update(statusMsg{doc: d, at: t0})
	if got := m.selectedName(); got != "worker" {
		t.Errorf("after a reorder: selected %q, want worker", got)
	}
	d = document(func(d *status.Document) { d.Containers = d.Containers[2:] })
	m.update(statusMsg{doc: d, at: t0})
	if got := m.selectedName(); got != "metrics-exporter" {
		t.Errorf("after worker went: selected %q, want the first row, metrics-exporter", got)
	}
}

// TestActionOutcome: an action's answer is the status line, and the status is read
// again at once.
func TestActionOutcome(t *testing.T) {
	m := model(document(nil))
	effects := m.update(actMsg{action: Restart, target: "web"})
	if m.note != "restart web: ok" || m.noteFailed {
		t.Errorf("note %q (failed %v), want restart web: ok", m.note, m.noteFailed)
	}
	if !reflect.DeepEqual(effects, []effect{{kind: effFetch}}) {
		t.Errorf("effects %+v, want a fetch", effects)
	}
}

func TestKeysDecode(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"q", []string{"q"}},
		{"jjk", []string{"j", "j", "k"}},
		{"\x1b[A\x1b[B", []string{"up", "down"}},
		{"\x1bOA", []string{"up"}},
		{"\x1b", []string{"esc"}},
		{"\r", []string{"enter"}},
		{"\x7f", []string{"backspace"}},
		{"\x03", []string{"ctrl+c"}},
		{"\x1b[5~\x1b[6~", []string{"pgup", "pgdown"}},
		{"\x1b[1;5C", nil}, // Ctrl+→: not a key of tend top
		{"é", []string{"é"}},
	}
	for _, c := range cases {
		if got := keys([]byte(c.in)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("keys(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestTableShowsTheSelection: with more containers than rows, the table scrolls so
// that the selected row is on the screen, down and back up.
func TestTableShowsTheSelection(t *testing.T) {
	m := model(document(func(d *status.Document) {
		d.Containers = nil
		for i := range 40 {
			d.Containers = append(d.Containers, running(fmt.Sprintf("c%02d", i), 100+i, 0, 1<<20, 0))
		}
	}))
	shown := func(name string) bool {
		for _, l := range View(m, 80, 24) {
			if strings.HasPrefix(l, "> "+name+" ") {
				return true
			}
		}
		return false
	}
	for range 30 {
		m.key("j")
	}
	if !shown("c30") {
		t.Errorf("c30 selected but not shown:\n%s", strings.Join(View(m, 80, 24), "\n"))
	}
	for range 25 {
		m.key("k")
	}
	if !shown("c05") {
		t.Errorf("c05 selected but not shown:\n%s", strings.Join(View(m, 80, 24), "\n"))
	}
}
