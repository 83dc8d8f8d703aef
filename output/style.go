package output

import (
	"hash/fnv"
	"strings"
	"time"
)

// Style is how child lines look on one of tend's streams.
type Style struct {
	// Color gives each container's "NAME |" a colour of its own (ANSI; for a
	// terminal without NO_COLOR).
	Color bool
	// Timestamps puts the time (RFC 3339, milliseconds) before each line.
	Timestamps bool
	// Align pads names to the longest (Console.Align): for a terminal, where the
	// columns line up. A pipe or a file gets exactly "NAME | ", for the tools that
	// parse it.
	Align bool
}

// TimeLayout is the time of child lines in log files and, with --timestamps, on the
// console: RFC 3339 with milliseconds, as tend's own log writes it.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// stamp is the text of one time in TimeLayout. It formats the whole time once per
// second and only the milliseconds in between: no allocation, a few ns per Write.
type stamp struct {
	second int64 // the Unix second buf holds; buf is empty before the first set
	buf    [40]byte
	n      int
}

func (s *stamp) set(t time.Time) {
	if sec := t.Unix(); s.n == 0 || sec != s.second {
		s.n = len(t.AppendFormat(s.buf[:0], TimeLayout))
		s.second = sec
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	// "2006-01-02T15:04:05." is 20 bytes; a year past 9999 has no fixed place.
	if s.n > 23 && s.buf[19] == '.' {
		s.buf[20], s.buf[21], s.buf[22] = byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10)
	}
}

func (s *stamp) text() []byte { return s.buf[:s.n] }

// palette holds the colours of names: the six ANSI colours that read on dark and light
// backgrounds alike, then their bright forms.
var palette = []string{"36", "33", "32", "35", "34", "31", "96", "93", "92", "95", "94", "91"}

// consolePrefix appends "NAME | " with NAME padded to width and, with color, "NAME |"
// in the colour of the container (an init command NAME/init[N] takes its container's).
func consolePrefix(b []byte, name string, width int, color bool) []byte {
	if color {
		container, _, _ := strings.Cut(name, "/")
		h := fnv.New32a()
		h.Write([]byte(container))
		b = append(b, "\x1b["...)
		b = append(b, palette[h.Sum32()%uint32(len(palette))]...)
		b = append(b, 'm')
	}
	b = append(b, name...)
	for i := len(name); i < width; i++ {
		b = append(b, ' ')
	}
	b = append(b, " |"...)
	if color {
		b = append(b, "\x1b[0m"...)
	}
	return append(b, ' ')
}
