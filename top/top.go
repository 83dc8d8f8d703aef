// Package top is `tend top`, a live terminal view of a running tend
// (docs/reference.md "Watching a running instance"): a model that keys and API reads
// change (model.go), a view that is a pure function of the model and the terminal's
// size (view.go), and the loop that draws it while reading the API off the drawing
// path (this file). It reads and acts only through a Client: the API.
package top

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tend-sh/tend/status"
)

// Client is the running tend as the view reads and steers it, through the API's
// routes: cli implements it with its API client.
type Client interface {
	// Status is GET /v1/status.
	Status() (*status.Document, error)
	// Describe is GET /v1/containers/NAME as `tend describe NAME` prints it, a line
	// each, with times relative to now.
	Describe(name string, now time.Time) ([]string, error)
	// Do asks for an action: restart, stop and start a container, activate a
	// revision, roll back (target "").
	Do(action Action, target string) error
	// FollowLogs follows the container's logs from the last lines tend kept, a call
	// of line for each, until ctx ends or tend ends the stream.
	FollowLogs(ctx context.Context, name string, line func(string)) error
}

// keyMsg is a key pressed.
type keyMsg string

// Run shows the view of m on the terminal in and out until q, Ctrl-C, SIGTERM or
// the end of in. One goroutine reads the status (and, on the describe screen, the
// container) each m.Interval, one follows the logs on the logs screen, one per
// action waits for its answer; this one only draws.
func Run(client Client, m *Model, in, out *os.File) error {
	t, err := openTerminal(in, out)
	if err != nil {
		return err
	}
	defer t.restore()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs := make(chan any, 256)
	send := func(msg any) {
		select {
		case msgs <- msg:
		case <-ctx.Done():
		}
	}
	go readKeys(in, send)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGWINCH, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(signals)

	var describe atomic.Value // the container the describe screen shows, "" for none
	describe.Store("")
	kick := make(chan struct{}, 1)
	go poll(ctx, client, m.Interval, &describe, kick, send)

	stopLogs := func() {}
	defer func() { stopLogs() }()
	for {
		width, height := t.size()
		if err := t.draw(View(m, width, height)); err != nil {
			return err
		}
		var msg any
		select {
		case sig := <-signals:
			if sig != syscall.SIGWINCH {
				return nil
			}
			continue
		case msg = <-msgs:
		}
		// Take every message that is waiting before drawing again: a busy log stream
		// costs one frame per batch, not one per line.
		for {
			var effects []effect
			if k, ok := msg.(keyMsg); ok {
				effects = m.key(string(k))
			} else {
				effects = m.update(msg)
			}
			name := ""
			if m.screen == describeScreen {
				name = m.selectedName()
			}
			describe.Store(name) // before a kick, so that the poll it wakes reads it
			for _, e := range effects {
				switch e.kind {
				case effQuit:
					return nil
				case effAct:
					go func() { send(actMsg{action: e.action, target: e.target, err: client.Do(e.action, e.target)}) }()
				case effLogs:
					stopLogs()
					stopLogs = followLogs(ctx, client, e.target, send)
				case effLogsClose:
					stopLogs()
				case effFetch:
					select {
					case kick <- struct{}{}:
					default:
					}
				}
			}
			if len(msgs) == 0 {
				break
			}
			msg = <-msgs
		}
	}
}

// followLogs follows the container's logs in a goroutine, each line a message, until
// the returned function is called.
func followLogs(ctx context.Context, client Client, name string, send func(any)) context.CancelFunc {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		err := client.FollowLogs(ctx, name, func(l string) { send(logMsg{name: name, lines: []string{l}}) })
		if ctx.Err() == nil {
			send(logMsg{name: name, err: err, ended: true})
		}
	}()
	return cancel
}

// readKeys sends each key read from in; the end of in is a quit (Ctrl-C).
func readKeys(in *os.File, send func(any)) {
	buf := make([]byte, 256)
	for {
		n, err := in.Read(buf)
		for _, k := range keys(buf[:n]) {
			send(keyMsg(k))
		}
		if err != nil {
			send(keyMsg("ctrl+c"))
			return
		}
	}
}

// poll reads the status each interval, or at once when kicked, and the container
// of the describe screen after it; one request of each at a time, whatever the
// screen does meanwhile.
func poll(ctx context.Context, client Client, interval time.Duration, describe *atomic.Value, kick <-chan struct{}, send func(any)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		doc, err := client.Status()
		send(statusMsg{doc: doc, err: err, at: time.Now()})
		if name := describe.Load().(string); name != "" && err == nil {
			lines, err := client.Describe(name, time.Now())
			send(detailMsg{name: name, lines: lines, err: err})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-kick:
		}
	}
}
