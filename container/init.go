package container

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// RunUntilSuccess runs a command again and again until it exits 0, by its time_limit:
// after initial_delay, each run bounded by max_execution_time, the period measured
// from the start of one run to the start of the next. starting (if not nil) is called
// before every run, attempt after it with the wait before the next try (0 after a
// success). It returns nil on success or ctx's error once ctx is done.
func RunUntilSuccess(ctx context.Context, argv func() ([]string, error), c proc.Cmd, tl restart.TimeLimit, starting func(), attempt func(e proc.Exit, retryIn time.Duration)) error {
	if !restart.Sleep(ctx, tl.InitialDelay) {
		return ctx.Err()
	}
	for {
		if starting != nil {
			starting()
		}
		started := time.Now()
		var e proc.Exit
		args, err := argv()
		if err != nil {
			e = proc.Exit{Code: -1, StartErr: err}
		} else {
			c.Argv = args
			e = proc.Run(ctx, c, tl.MaxExecution)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.Success() {
			attempt(e, 0)
			return nil
		}
		// Consecutive successes are 0 while retrying, so the period stays at step 0.
		wait := tl.Wait(0, started, time.Now())
		attempt(e, wait)
		if !restart.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// runInit runs the init commands of s in order, each until it succeeds. It runs in a
// goroutine of its own, so it is handed the spec: a rollback may swap the loop's.
func (l *loop) runInit(ctx context.Context, s specState) error {
	sc, cfg := s.sc, s.cfg
	for i := range sc.Init {
		ic := &sc.Init[i]
		name := fmt.Sprintf("%s/init[%d]", sc.Name, i)
		attempts := 0
		mark := l.c.newRunMark()
		err := RunUntilSuccess(ctx,
			func() ([]string, error) { return spec.Argv(ic.Command, cfg.Env) },
			proc.Cmd{Env: proc.WithRunMark(cfg.Env, mark), Dir: cfg.Dir, Stdout: l.c.initWriter(name, cfg.Stdout), Stderr: l.c.initWriter(name, cfg.Stderr), Ident: sc.Identity(), Cgroup: l.c.Placement()},
			restart.FromSpec(ic.TimeLimit), nil,
			func(e proc.Exit, _ time.Duration) {
				l.c.endInitRun(mark) // nothing it started outlives it (docs/reference.md "Running")
				attempts++
				ev := l.log.Info()
				if !e.Success() {
					ev = l.log.Warn()
				}
				ev.Int("init", i).Int("attempt", attempts).Str("exit", e.String()).Msg("init command finished")
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// outputWriter is where a container process's stream goes: prefixed lines to out and
// to the log file, checked by the log_line matchers ms. nil discards.
func (c *Container) outputWriter(out *output.Console, ms ...*output.LineMatch) io.Writer {
	if out == nil && c.logFile == nil && c.cfg.Logs == nil && len(ms) == 0 {
		return nil
	}
	return c.lineWriter(c.cfg.Spec.Name, out).WithMatches(ms...)
}

// initWriter is where an init command's stream goes (nil: nowhere).
func (c *Container) initWriter(name string, out *output.Console) io.Writer {
	if out == nil && c.logFile == nil && c.cfg.Logs == nil {
		return nil
	}
	return c.lineWriter(name, out)
}

// lineWriter writes the lines of one stream, which it tells by out (the stream of
// the lines in log.file).
func (c *Container) lineWriter(name string, out *output.Console) *output.LineWriter {
	var file io.Writer
	if c.logFile != nil {
		file = c.logFile
	}
	stderr := out != nil && out == c.cfg.Stderr && out != c.cfg.Stdout
	w := output.NewLineWriter(name, out, file).WithRing(c.cfg.Logs, stderr)
	if stderr {
		w.WithStream("stderr")
	}
	return w
}
