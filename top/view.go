package top

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tend-sh/tend/status"
)

// View is the screen for m on a terminal of width × height cells: exactly height
// lines, none wider than width. It is a pure function of its arguments: the golden
// tests compare its lines, and Run writes them.
func View(m *Model, width, height int) []string {
	if width < 20 || height < 6 {
		return pad([]string{"terminal too small"}, width, height)
	}
	var body []string
	switch {
	case m.doc == nil:
		body = m.waitingView()
	case m.screen == helpScreen:
		body = helpView()
	case m.screen == describeScreen:
		body = m.describeView(width, height-1)
	case m.screen == logsScreen:
		body = m.logsView(width, height-1)
	case m.screen == revisionsScreen:
		body = m.revisionsView(width, height-1)
	default:
		body = m.tableView(width, height-1)
	}
	lines := pad(body, width, height-1)
	return append(lines, m.statusLine(width))
}

// pad is lines cut or filled to height lines, each fitted to width cells.
func pad(lines []string, width, height int) []string {
	out := make([]string, height)
	for i := range out {
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		out[i] = fitStyled(line, width)
	}
	return out
}

// waitingView is the screen before tend first answered.
func (m *Model) waitingView() []string {
	if m.err == nil {
		return []string{"tend top: asking " + m.Addr + " ..."}
	}
	return []string{
		"tend top: " + m.Addr,
		"",
		m.paint(red, "tend is unreachable: "+oneLine(m.err.Error())),
		fmt.Sprintf("retrying every %s (for %s so far)", m.Interval, status.HumanDuration(m.now.Sub(m.errSince))),
	}
}

// header is the lines above every screen but help: the instance, its state and
// conditions, tend's own footprint, and what needs a look (unreachable, not
// ready, a reload error, limits not applied).
func (m *Model) header() []string {
	d := m.doc
	line1 := fmt.Sprintf("%s  revision %s  %s", d.Instance, d.Revision, m.paint(instanceColor(d.State), string(d.State)))
	if t := d.Tend; t != nil {
		line1 += "  up " + status.HumanDuration(m.now.Sub(t.StartedAt.Time))
	}
	line2 := fmt.Sprintf("installed %s  ready %s", condText(d.Installed), condText(d.Ready))
	line3 := "cgroups " + string(d.Cgroups.Mode)
	if d.Cgroups.Reason != "" {
		line3 += " (" + d.Cgroups.Reason + ")"
	}
	if t := d.Tend; t != nil {
		line3 = fmt.Sprintf("tend pid %d  CPU %.1f%%  MEM %s  %s", t.Pid, m.selfCPU, shortBytes(t.MemoryBytes), line3)
	}
	notice := ""
	switch {
	case m.err != nil:
		notice = m.paint(red, fmt.Sprintf("unreachable for %s, retrying every %s: %s", status.HumanDuration(m.now.Sub(m.errSince)), m.Interval, oneLine(m.err.Error())))
	case d.ReloadError != "":
		notice = m.paint(red, "reload error: "+oneLine(d.ReloadError))
	case !d.Ready.True() && d.Ready.Message != "":
		notice = m.paint(yellow, "not ready: "+oneLine(d.Ready.Message))
	default:
		notice = m.paint(yellow, limitsNotice(d))
	}
	return []string{line1, line2, line3, notice}
}

func condText(c status.Condition) string {
	if c.Reason == "" {
		return c.Status
	}
	return c.Status + " (" + string(c.Reason) + ")"
}

// limitsNotice names the containers whose limits could not be applied; "" when every
// limit applies.
func limitsNotice(d *status.Document) string {
	var names []string
	for _, c := range d.Containers {
		if !c.LimitsApplied {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "limits not applied to " + strings.Join(names, ", ") + " (Enter: why)"
}

// columns are the table's column widths; name and exit take what the others leave.
type columns struct{ name, exit int }

const fixedColumns = 9 + 7 + 8 + 5 + 6 + 12 + 6 + 8 + 2 // STATE..SINCE, separators, the marker

func tableColumns(width int, cs []status.Container) columns {
	longest := 4
	for _, c := range cs {
		longest = max(longest, textWidth(c.Name))
	}
	rest := max(width-fixedColumns, 12)
	name := min(longest, 32, rest-8)
	return columns{name: name, exit: rest - name}
}

// tableView is the main screen: the header, a row per container and the selected
// one's chart.
func (m *Model) tableView(width, height int) []string {
	lines := m.header()
	cs := m.doc.Containers
	col := tableColumns(width, cs)
	lines = append(lines, fmt.Sprintf("  %s %-9s %7s %8s %-5s %6s %-12s %s %6s",
		fit("NAME", col.name), "STATE", "PID", "RESTARTS", "READY", "CPU", "MEM", fit("LAST EXIT", col.exit), "SINCE"))
	chart := m.chart(width)
	rows := max(1, height-len(lines)-len(chart))
	first := max(0, m.sel-rows+1) // the rows from the top, as far as the selection is shown
	for i := first; i < len(cs) && i < first+rows; i++ {
		lines = append(lines, m.row(cs[i], col, i == m.sel))
	}
	for len(lines) < height-len(chart) {
		lines = append(lines, "")
	}
	if len(cs) == 0 && len(lines) > 5 {
		lines[5] = "  (no containers)"
	}
	return append(lines, chart...)
}

// row is one container's line of the table.
func (m *Model) row(c status.Container, col columns, selected bool) string {
	pid, cpu, mem := "-", "-", "-"
	if c.Pid != nil {
		pid = fmt.Sprint(*c.Pid)
		cpu = fmt.Sprintf("%.1f%%", c.Usage.CPUPercent)
		mem = shortBytes(c.Usage.MemoryBytes)
	}
	if c.Limits.MemoryBytes > 0 {
		mem += "/" + shortBytes(c.Limits.MemoryBytes)
	}
	ready := c.Ready.Status
	if c.State == status.Stopped {
		ready = "-"
	}
	exit := "-"
	if c.LastExit != nil {
		exit = string(c.LastExit.Reason)
		if textWidth(exit) > col.exit { // "exit code 1" → "exit 1", "killed by SIGKILL" → "SIGKILL"
			exit = strings.TrimPrefix(strings.Replace(exit, "exit code ", "exit ", 1), "killed by ")
		}
	}
	marker := "  "
	if selected {
		marker = "> "
	}
	state := m.paint(stateColor(c.State), fit(string(c.State), 9))
	line := fmt.Sprintf("%s%s %s %7s %8d %-5s %6s %s %s %6s", marker, fit(c.Name, col.name), state, pid,
		c.Restarts, ready, cpu, fit(mem, 12), fit(exit, col.exit), m.since(c))
	if selected && m.Color {
		line = "\x1b[1m" + line + "\x1b[0m"
	}
	return line
}

// since is how long the container has been in its state, as far as the document
// tells: since its start while it runs, since its last exit after one.
func (m *Model) since(c status.Container) string {
	switch {
	case c.Pid != nil && c.StartedAt != nil:
		return status.HumanDuration(m.now.Sub(c.StartedAt.Time))
	case c.NextStartAt != nil:
		return "in " + status.HumanDuration(c.NextStartAt.Sub(m.now))
	case c.LastExit != nil:
		return status.HumanDuration(m.now.Sub(c.LastExit.At.Time))
	}
	return "-"
}

// chart is the selected container's CPU and memory over the last minute, as two
// lines of bars; none on a short terminal.
func (m *Model) chart(width int) []string {
	c, ok := m.selected()
	h := m.history[c.Name]
	if !ok || h == nil || width < 40 {
		return nil
	}
	bars := width - 40
	topCPU := 1.0
	for _, v := range h.cpu {
		topCPU = max(topCPU, v)
	}
	var topMem int64 = 1 << 20
	for _, v := range h.mem {
		topMem = max(topMem, v)
	}
	memScale := topMem
	if c.Limits.MemoryBytes > 0 {
		memScale = max(c.Limits.MemoryBytes, topMem)
	}
	cpuNow, memNow := h.cpu[len(h.cpu)-1], h.mem[len(h.mem)-1]
	mem := shortBytes(memNow)
	if c.Limits.MemoryBytes > 0 {
		mem += "/" + shortBytes(c.Limits.MemoryBytes)
	}
	return []string{
		fmt.Sprintf("CPU %s %s %.1f%% (top %.1f%%)", fit(c.Name, 12), m.paint(green, sparkline(h.cpu, bars, func(v float64) float64 { return v / topCPU })), cpuNow, topCPU),
		fmt.Sprintf("MEM %s %s %s", fit(c.Name, 12), m.paint(cyan, sparkline(h.mem, bars, func(v int64) float64 { return float64(v) / float64(memScale) })), mem),
	}
}

// sparkline draws the last n values (fewer when there are fewer) as bars of eight
// heights, padded on the left to n cells.
func sparkline[T any](values []T, n int, scale func(T) float64) string {
	const levels = " ▁▂▃▄▅▆▇█"
	bars := []rune(levels)
	values = values[max(0, len(values)-n):]
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", n-len(values)))
	for _, v := range values {
		f := min(max(scale(v), 0), 1)
		level := int(f*8 + 0.5)
		if level == 0 && f > 0 {
			level = 1 // something, however small, is not nothing
		}
		b.WriteRune(bars[level])
	}
	return b.String()
}

// describeView is the selected container's detail, as `tend describe` prints it.
func (m *Model) describeView(width, height int) []string {
	lines := []string{fmt.Sprintf("describe %s   (j/k scroll, l logs, Esc back)", m.selectedName()), ""}
	switch {
	case m.detailErr != nil:
		lines = append(lines, m.paint(red, oneLine(m.detailErr.Error())))
	case m.detail == nil:
		lines = append(lines, "reading ...")
	default:
		from := min(m.scroll, len(m.detail))
		lines = append(lines, m.detail[from:]...)
	}
	return lines[:min(len(lines), height)]
}

// logsView is the followed container's lines, the newest at the bottom.
func (m *Model) logsView(width, height int) []string {
	title := fmt.Sprintf("logs of %s, following   (/ search, j/k scroll, Esc back)", m.selectedName())
	if m.searching || m.search != "" {
		title = fmt.Sprintf("logs of %s matching /%s", m.selectedName(), m.search)
		if m.searching {
			title += "_   (Enter keeps it, Esc drops it)"
		}
	}
	lines := []string{title}
	shown := m.logs
	if m.search != "" {
		shown = nil
		needle := strings.ToLower(m.search)
		for _, l := range m.logs {
			if strings.Contains(strings.ToLower(l), needle) {
				shown = append(shown, l)
			}
		}
	}
	room := height - 1
	if m.logsErr != nil {
		room--
	}
	end := max(0, len(shown)-m.scroll)
	lines = append(lines, shown[max(0, end-room):end]...)
	if m.logsErr != nil {
		lines = append(lines, m.paint(red, oneLine(m.logsErr.Error())))
	}
	return lines
}

// revisionsView lists the instance's revisions, newest first.
func (m *Model) revisionsView(width, height int) []string {
	lines := append(m.header(), "revisions   (j/k select, a activate, b roll back, Esc back)",
		fmt.Sprintf("  %-14s %-6s %-6s %-8s %-22s %s", "ID", "ACTIVE", "SOURCE", "CREATED", "INSTALLED", "READY"))
	for i, r := range m.doc.Revisions {
		marker, active := "  ", ""
		if i == m.revSel {
			marker = "> "
		}
		if r.Active {
			active = "*"
		}
		ready := condText(r.Ready)
		if r.Ready.Message != "" && !r.Active {
			ready += ": " + r.Ready.Message
		}
		lines = append(lines, fmt.Sprintf("%s%-14s %-6s %-6s %-8s %-22s %s", marker, fit(r.ID, 14), active, r.Source,
			status.HumanDuration(m.now.Sub(r.CreatedAt.Time)), fit(condText(r.Installed), 22), ready))
	}
	if len(m.doc.Revisions) == 0 {
		lines = append(lines, "  (no revisions)")
	}
	return lines[:min(len(lines), height)]
}

// helpView lists the keys.
func helpView() []string {
	return []string{
		"keys of tend top",
		"",
		"  ↑/↓ or j/k   select a container (a revision, or scroll)",
		"  Enter        describe the selected container: status, probe results, events",
		"  l            its logs, following; / searches them",
		"  r            restart it",
		"  s            stop it, or start it when stopped (asks y/n)",
		"  v            revisions: a activates the selected one, b rolls back (asks y/n)",
		"  ?            this help",
		"  Esc          back",
		"  q, Ctrl-C    quit",
	}
}

// statusLine is the last line: the question asked, what the last action did, or
// the keys of the screen.
func (m *Model) statusLine(width int) string {
	switch {
	case m.question != nil:
		return fitStyled(m.paint(yellow, what(m.question.action, m.question.target)+"? y/n"), width)
	case m.note != "":
		color := green
		if m.noteFailed {
			color = red
		}
		return fitStyled(m.paint(color, m.note), width)
	case m.doc == nil:
		return fit("q quit", width)
	case m.screen == tableScreen:
		return fit("⏎ describe  l logs  r restart  s stop/start  v revisions  ? help  q quit", width)
	}
	return fit("Esc back  ? help  q quit", width)
}

// Colours: SGR foreground codes.
const (
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
)

func stateColor(s status.State) string {
	switch s {
	case status.Running, status.Succeeded:
		return green
	case status.Backoff, status.Failed:
		return red
	case status.Stopping, status.Waiting, status.Initializing:
		return yellow
	}
	return ""
}

func instanceColor(s status.InstanceState) string {
	switch s {
	case status.InstanceRunning:
		return green
	case status.InstanceStopping, status.InstancePreparing:
		return yellow
	}
	return red
}

// paint colours s with the SGR code, unless colour is off or s is empty.
func (m *Model) paint(code, s string) string {
	if !m.Color || code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// fit is s made safe (no control characters) and cut or padded to exactly w cells;
// a cut ends in "…".
func fit(s string, w int) string {
	var b strings.Builder
	used := 0
	for _, r := range s {
		if r == '\t' {
			r = ' '
		}
		if unicode.IsControl(r) {
			continue
		}
		rw := runeWidth(r)
		if used+rw > w {
			return cut(b.String(), used, w)
		}
		b.WriteRune(r)
		used += rw
	}
	return b.String() + strings.Repeat(" ", w-used)
}

// cut ends a string of used cells that did not fit w with "…", padded to w.
func cut(s string, used, w int) string {
	if w == 0 {
		return ""
	}
	r := []rune(s)
	for len(r) > 0 && used > w-1 {
		used -= runeWidth(r[len(r)-1])
		r = r[:len(r)-1]
	}
	return string(r) + "…" + strings.Repeat(" ", w-1-used)
}

// fitStyled is fit for a line that may hold the SGR sequences of paint: they take
// no cells and are kept; a cut line ends its colour.
func fitStyled(s string, w int) string {
	if !strings.Contains(s, "\x1b[") {
		return fit(s, w)
	}
	var b strings.Builder
	used, styled := 0, false
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "\x1b[") {
			j := strings.IndexByte(s[i:], 'm')
			if j < 0 {
				break
			}
			b.WriteString(s[i : i+j+1])
			styled = s[i:i+j+1] != "\x1b[0m"
			i += j + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unicode.IsControl(r) {
			continue
		}
		rw := runeWidth(r)
		if used+rw > w {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	if styled {
		b.WriteString("\x1b[0m")
	}
	return b.String() + strings.Repeat(" ", w-used)
}

// textWidth is how many cells s takes.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is 2 for the wide (East Asian, emoji) runes, 1 for the others: a
// terminal puts the wide ones in two cells.
func runeWidth(r rune) int {
	switch {
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
		r >= 0xffe0 && r <= 0xffe6, r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

// shortBytes is n in binary units, whole from 100 up: 512Mi, 20.3Mi, 1.5Gi.
func shortBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	if v >= 100 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f%ci", v, units[i])
	}
	return fmt.Sprintf("%.1f%ci", v, units[i])
}
