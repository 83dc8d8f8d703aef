package top

import (
	"fmt"
	"strings"
	"time"

	"github.com/tend-sh/tend/status"
)

// screen is what the view shows.
type screen int

const (
	tableScreen screen = iota
	describeScreen
	logsScreen
	revisionsScreen
	helpScreen
)

// Action is what a key asks the running tend to do, through the API.
type Action string

// The actions of the keys r, s, a and b.
const (
	Restart  Action = "restart"
	Stop     Action = "stop"
	Start    Action = "start"
	Activate Action = "activate"
	Rollback Action = "rollback"
)

// effect is what a key or a message asks the loop (Run) to do beyond changing the
// model: the model itself never calls the API.
type effect struct {
	kind   effectKind
	action Action // effAct
	target string // effAct: a container or a revision; effLogs: a container
}

type effectKind int

const (
	effQuit      effectKind = iota
	effAct                  // do action on target
	effLogs                 // follow target's logs (from the end of what tend kept)
	effLogsClose            // stop following
	effFetch                // read now what the screen shows, not at the next tick
)

// confirm is a question on the status line that y answers.
type confirm struct {
	action Action
	target string
}

// maxLogLines bounds the lines the logs screen keeps.
const maxLogLines = 2000

// Model is everything the view shows. The loop changes it with statusMsg,
// detailMsg, logMsg, actMsg and keys (key), and draws View(m, width, height) after each.
type Model struct {
	Addr     string        // where tend is asked, for the unreachable message
	Interval time.Duration // between status reads
	Color    bool          // colour states (false under NO_COLOR)

	doc      *status.Document // the last status read; nil before the first
	err      error            // why the last read failed; nil after a good one
	errSince time.Time        // since when reads fail
	now      time.Time        // of the last read, good or not
	docAt    time.Time        // of the last good read
	selfCPU  float64          // tend's own CPU, % of a core between the last two reads
	history  map[string]*samples

	screen, back screen // back: where Esc goes from help
	sel          int    // selected container (its index in doc.Containers)
	revSel       int    // selected revision
	scroll       int    // describe: first line; logs: lines back from the end

	detail     []string // describe: the lines of the selected container's detail
	detailErr  error
	logs       []string // logs: the lines followed so far
	logsErr    error
	search     string // logs: only lines containing it
	searching  bool   // the search is being typed
	question   *confirm
	note       string // what the last action did, or why it failed
	noteFailed bool
}

// samples are one container's CPU (% of a core) and memory of the last minute, one
// per status read, oldest first.
type samples struct {
	cpu []float64
	mem []int64
}

// NewModel is a model that has read nothing yet.
func NewModel(addr string, interval time.Duration, color bool) *Model {
	return &Model{Addr: addr, Interval: interval, Color: color, history: map[string]*samples{}}
}

// statusMsg is one status read: the document, or why there is none.
type statusMsg struct {
	doc *status.Document
	err error
	at  time.Time
}

// detailMsg is one describe read of a container, as lines for people.
type detailMsg struct {
	name  string
	lines []string
	err   error
}

// logMsg is lines of the followed container's logs, or the end of the stream.
type logMsg struct {
	name  string
	lines []string
	err   error // the stream ended (nil: tend ended it)
	ended bool
}

// actMsg is the outcome of an action.
type actMsg struct {
	action Action
	target string
	err    error
}

// keep is how many samples a chart keeps: a minute's worth.
func (m *Model) keep() int {
	n := int(time.Minute / max(m.Interval, 10*time.Millisecond))
	return min(max(n, 2), 600)
}

// update applies a message of the loop.
func (m *Model) update(msg any) []effect {
	switch msg := msg.(type) {
	case statusMsg:
		m.setStatus(msg)
	case detailMsg:
		if msg.name == m.selectedName() {
			m.detail, m.detailErr = msg.lines, msg.err
		}
	case logMsg:
		if msg.name != m.selectedName() || m.screen != logsScreen {
			return nil
		}
		m.logs = append(m.logs, msg.lines...)
		if over := len(m.logs) - maxLogLines; over > 0 {
			m.logs = append(m.logs[:0], m.logs[over:]...)
		}
		if msg.ended {
			m.logsErr = msg.err
			if msg.err == nil {
				m.logsErr = fmt.Errorf("the log stream ended")
			}
		}
	case actMsg:
		m.note, m.noteFailed = what(msg.action, msg.target)+": ok", false
		if msg.err != nil {
			m.note, m.noteFailed = what(msg.action, msg.target)+": "+oneLine(msg.err.Error()), true
		}
		return []effect{{kind: effFetch}}
	}
	return nil
}

// setStatus takes a status read: the document, tend's own CPU between this read and
// the last, each container's samples; the selection stays on its container.
func (m *Model) setStatus(msg statusMsg) {
	if msg.err != nil {
		if m.err == nil {
			m.errSince = msg.at
		}
		m.err, m.now = msg.err, msg.at
		return
	}
	name := m.selectedName()
	if old := m.doc; old != nil && old.Tend != nil && msg.doc.Tend != nil && old.Tend.Pid == msg.doc.Tend.Pid {
		if dt := msg.at.Sub(m.docAt).Seconds(); dt > 0 {
			m.selfCPU = max(0, (msg.doc.Tend.CPUSeconds-old.Tend.CPUSeconds)/dt*100)
		}
	}
	m.doc, m.err, m.now, m.docAt = msg.doc, nil, msg.at, msg.at
	keep := m.keep()
	seen := map[string]bool{}
	for _, c := range msg.doc.Containers {
		seen[c.Name] = true
		h := m.history[c.Name]
		if h == nil {
			h = &samples{}
			m.history[c.Name] = h
		}
		cpu, mem := 0.0, int64(0)
		if c.Pid != nil {
			cpu, mem = c.Usage.CPUPercent, c.Usage.MemoryBytes
		}
		h.cpu = append(h.cpu, cpu)
		h.mem = append(h.mem, mem)
		if over := len(h.cpu) - keep; over > 0 {
			h.cpu, h.mem = h.cpu[over:], h.mem[over:]
		}
	}
	for n := range m.history {
		if !seen[n] {
			delete(m.history, n)
		}
	}
	m.sel = 0
	for i, c := range msg.doc.Containers {
		if c.Name == name {
			m.sel = i
		}
	}
	m.revSel = min(m.revSel, max(0, len(msg.doc.Revisions)-1))
}

// selected is the selected container, if there is one.
func (m *Model) selected() (status.Container, bool) {
	if m.doc == nil || m.sel >= len(m.doc.Containers) {
		return status.Container{}, false
	}
	return m.doc.Containers[m.sel], true
}

func (m *Model) selectedName() string {
	c, _ := m.selected()
	return c.Name
}

// key handles one key press (keyName's names: "up", "enter", "esc", "q", ...).
func (m *Model) key(k string) []effect {
	if k == "ctrl+c" {
		return []effect{{kind: effQuit}}
	}
	m.note, m.noteFailed = "", false
	if q := m.question; q != nil {
		m.question = nil
		if k != "y" {
			m.note = what(q.action, q.target) + ": cancelled"
			return nil
		}
		m.note = what(q.action, q.target) + " ..."
		return []effect{{kind: effAct, action: q.action, target: q.target}}
	}
	if m.searching {
		switch k {
		case "enter":
			m.searching = false
		case "esc":
			m.searching, m.search = false, ""
		case "backspace":
			if r := []rune(m.search); len(r) > 0 {
				m.search = string(r[:len(r)-1])
			}
		default:
			if len([]rune(k)) == 1 {
				m.search += k
			}
		}
		m.scroll = 0
		return nil
	}
	switch m.screen {
	case helpScreen:
		if k == "esc" || k == "?" {
			m.screen = m.back
			return nil
		}
	case tableScreen:
		return m.tableKey(k)
	case describeScreen:
		switch k {
		case "esc":
			m.screen = tableScreen
		case "l":
			return m.openLogs()
		}
		m.scrollKey(k, 1)
	case logsScreen:
		switch k {
		case "esc":
			if m.search != "" {
				m.search, m.scroll = "", 0
				return nil
			}
			m.screen = tableScreen
			return []effect{{kind: effLogsClose}}
		case "/":
			m.searching, m.search, m.scroll = true, "", 0
		}
		m.scrollKey(k, -1)
	case revisionsScreen:
		return m.revisionsKey(k)
	}
	if k == "q" {
		return []effect{{kind: effQuit}}
	}
	if k == "?" && m.screen != helpScreen {
		m.back, m.screen = m.screen, helpScreen
	}
	return nil
}

// tableKey handles a key of the containers' table.
func (m *Model) tableKey(k string) []effect {
	c, ok := m.selected()
	switch k {
	case "up", "k":
		m.sel = max(0, m.sel-1)
	case "down", "j":
		if m.doc != nil {
			m.sel = min(m.sel+1, max(0, len(m.doc.Containers)-1))
		}
	case "enter":
		if ok {
			m.screen, m.detail, m.detailErr, m.scroll = describeScreen, nil, nil, 0
			return []effect{{kind: effFetch}}
		}
	case "l":
		if ok {
			return m.openLogs()
		}
	case "r":
		if ok {
			m.note, m.noteFailed = "restart "+c.Name+" ...", false
			return []effect{{kind: effAct, action: Restart, target: c.Name}}
		}
	case "s":
		if ok {
			m.question = &confirm{action: Stop, target: c.Name}
			if stoppedState(c) {
				m.question.action = Start
			}
		}
	case "v":
		m.screen, m.revSel = revisionsScreen, 0
	case "q":
		return []effect{{kind: effQuit}}
	case "?":
		m.back, m.screen = tableScreen, helpScreen
	}
	return nil
}

// stoppedState tells whether s offers start rather than stop.
func stoppedState(c status.Container) bool {
	switch c.State {
	case status.Stopped, status.Completed, status.Failed:
		return true
	}
	return c.StoppedByRequest
}

// revisionsKey handles a key of the revisions' list.
func (m *Model) revisionsKey(k string) []effect {
	var revs []status.Revision
	if m.doc != nil {
		revs = m.doc.Revisions
	}
	switch k {
	case "esc":
		m.screen = tableScreen
	case "up", "k":
		m.revSel = max(0, m.revSel-1)
	case "down", "j":
		m.revSel = min(m.revSel+1, max(0, len(revs)-1))
	case "a":
		if m.revSel < len(revs) {
			m.question = &confirm{action: Activate, target: revs[m.revSel].ID}
		}
	case "b":
		m.question = &confirm{action: Rollback}
	case "q":
		return []effect{{kind: effQuit}}
	case "?":
		m.back, m.screen = revisionsScreen, helpScreen
	}
	return nil
}

// openLogs switches to the selected container's logs.
func (m *Model) openLogs() []effect {
	name := m.selectedName()
	if name == "" {
		return nil
	}
	m.screen, m.logs, m.logsErr, m.search, m.scroll = logsScreen, nil, nil, "", 0
	return []effect{{kind: effLogs, target: name}}
}

// scrollKey moves a scrolled screen: dir 1 where up shows earlier lines by lowering
// scroll (describe), -1 where scroll counts back from the end (logs).
func (m *Model) scrollKey(k string, dir int) {
	step := 0
	switch k {
	case "up", "k":
		step = -1
	case "down", "j":
		step = 1
	case "pgup":
		step = -10
	case "pgdown":
		step = 10
	case "home", "g":
		step = -1 << 20
	case "end", "G":
		step = 1 << 20
	}
	m.scroll = max(0, m.scroll+step*dir)
	if dir < 0 {
		m.scroll = min(m.scroll, len(m.logs))
	} else {
		m.scroll = min(m.scroll, max(0, len(m.detail)-1))
	}
}

// what names an action for the status line: "stop web", "rollback".
func what(a Action, target string) string {
	if target == "" {
		return string(a)
	}
	return string(a) + " " + target
}

// oneLine is s on one line: a multi-line error joined by "; ".
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
