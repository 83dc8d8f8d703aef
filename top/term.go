package top

import (
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// terminal is the controlling terminal in raw mode, showing the alternate screen;
// restore gives it back as it was.
type terminal struct {
	in, out *os.File
	saved   *unix.Termios
	last    string // the frame last written
}

// openTerminal switches in to raw mode (keys arrive one by one, unechoed; Ctrl-C is
// a key) and out to the alternate screen with the cursor hidden and no line wrap.
func openTerminal(in, out *os.File) (*terminal, error) {
	saved, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *saved
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	out.WriteString("\x1b[?1049h\x1b[?25l\x1b[?7l")
	return &terminal{in: in, out: out, saved: saved}, nil
}

// restore leaves the alternate screen and gives the terminal its modes back.
func (t *terminal) restore() {
	t.out.WriteString("\x1b[?7h\x1b[?25h\x1b[?1049l")
	unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, t.saved)
}

// size is the terminal's width and height in cells (80×24 when it cannot tell).
func (t *terminal) size() (width, height int) {
	ws, err := unix.IoctlGetWinsize(int(t.out.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 80, 24
	}
	return int(ws.Col), int(ws.Row)
}

// draw writes lines as the whole screen, unless it shows them already. View pads
// each line to the width, so nothing is erased: an erase at the end of a full line
// would take its last cell (with wrapping off, the cursor stays on it).
func (t *terminal) draw(lines []string) error {
	frame := "\x1b[H" + strings.Join(lines, "\r\n")
	if frame == t.last {
		return nil
	}
	t.last = frame
	_, err := t.out.WriteString(frame)
	return err
}

// keys decodes what one read of the terminal gave into key names: a printable
// rune as itself, and "up", "down", "pgup", "pgdown", "home", "end", "enter",
// "esc", "backspace", "ctrl+c". Sequences of other keys are dropped whole.
func keys(b []byte) []string {
	var out []string
	for len(b) > 0 {
		switch c := b[0]; {
		case c == 0x1b && len(b) == 1:
			return append(out, "esc")
		case c == 0x1b && (b[1] == '[' || b[1] == 'O'):
			// CSI or SS3: parameters, then a final byte in @–~.
			i := 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
			if i < len(b) {
				if k := csiKey(string(b[2 : i+1])); k != "" {
					out = append(out, k)
				}
			}
			b = b[min(i+1, len(b)):]
			continue
		case c == 0x1b:
			out = append(out, "esc") // Esc, then a key (Alt+key) that follows as itself
		case c == '\r' || c == '\n':
			out = append(out, "enter")
		case c == 0x7f || c == 0x08:
			out = append(out, "backspace")
		case c == 0x03:
			out = append(out, "ctrl+c")
		case c >= 0x20:
			r, size := utf8.DecodeRune(b)
			out = append(out, string(r))
			b = b[size:]
			continue
		}
		b = b[1:]
	}
	return out
}

// csiKey is the key of an escape sequence (after "ESC [" or "ESC O"), "" for one
// tend top does not use; xterm sends "A" for ↑ in normal and application cursor mode
// alike. A switch, not a map: a package-level map would be built at every start of tend.
func csiKey(seq string) string {
	switch seq {
	case "A":
		return "up"
	case "B":
		return "down"
	case "5~":
		return "pgup"
	case "6~":
		return "pgdown"
	case "H", "1~", "7~":
		return "home"
	case "F", "4~", "8~":
		return "end"
	}
	return ""
}
