package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// ending is how Run ends when preparing does not lead to running.
type ending struct {
	code int
	err  error
}

// preparing runs resources and init containers (bounded by init_timeout_ms) while it
// serves signals and requests. It returns the reloads asked for meanwhile (they run
// once the containers have started), or how Run ends instead.
func (sv *Supervisor) preparing(ctx context.Context, signals <-chan os.Signal, srv API) ([]request, *ending) {
	sv.log.Info().Str("instance", sv.spec.Instance.Name).Str("revision", sv.revision).Msg("preparing")
	prep := sv.startPreparing()
	defer prep.cancel()
	abort := func(code int, err error) *ending { return sv.abortPreparing(prep, code, err) }
	var queued []request
	for {
		select {
		case err := <-prep.done:
			return queued, sv.prepared(err)
		case sig := <-signals:
			switch sv.onSignal(phasePreparing, sig) {
			case signalStop:
				return queued, abort(0, nil)
			case signalReload:
				queued = append(queued, request{kind: reqReload})
			}
		case req := <-sv.requests:
			switch req.kind {
			case reqShutdown:
				req.reply(nil)
				return queued, abort(0, nil)
			case reqReload:
				sv.log.Info().Msg("reload queued until preparing ends")
				queued = append(queued, req) // after preparing (docs/reference.md "Reload")
			default:
				req.reply(errPreparing)
			}
		case err := <-srv.Failed():
			return queued, abort(1, &ExitError{err})
		case <-ctx.Done():
			return queued, abort(0, nil)
		}
	}
}

// preparation is the prepare phase running beside the main loop.
type preparation struct {
	done   chan error // prepare's result
	cancel context.CancelFunc
}

// startPreparing runs prepare, bounded by init_timeout_ms.
func (sv *Supervisor) startPreparing() *preparation {
	ctx, cancel := context.WithCancel(sv.runCtx)
	if t := spec.Ms(sv.spec.Instance.InitTimeoutMs); t > 0 {
		ctx, cancel = context.WithTimeout(sv.runCtx, t)
	}
	prep := &preparation{done: make(chan error, 1), cancel: cancel}
	go func() { prep.done <- sv.prepare(ctx) }()
	return prep
}

// abortPreparing ends preparing early: whatever runs is cancelled and waited for.
func (sv *Supervisor) abortPreparing(prep *preparation, code int, err error) *ending {
	prep.cancel()
	<-prep.done
	sv.setInstance(status.InstanceStopped, nil)
	return &ending{code, err}
}

// prepared ends preparing with its result: installed, or how Run ends.
func (sv *Supervisor) prepared(err error) *ending {
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("preparing took longer than instance.init_timeout_ms (%v)", spec.Ms(sv.spec.Instance.InitTimeoutMs))
		}
		sv.setInstance(status.InstanceStopped, func() {
			sv.installed.Set(false, status.ReasonPrepareFailed, err.Error(), time.Now())
		})
		sv.log.Error().Err(err).Msg("preparing failed")
		return &ending{1, &ExitError{err}}
	}
	now := time.Now()
	sv.setInstance(status.InstanceRunning, func() {
		sv.installed.Set(true, status.ReasonPrepared, "", now)
	})
	return nil
}

// prepare puts the resources and files in place, then runs the init containers.
func (sv *Supervisor) prepare(ctx context.Context) error {
	s := sv.spec
	if err := sv.prepareResources(ctx, s); err != nil {
		return err
	}
	if err := sv.prepareFiles(ctx, s); err != nil {
		return err
	}
	return sv.runInitContainers(ctx, s, false)
}

// runInitContainers runs the init containers of s strictly in order, each until it
// exits 0: at the first prepare every one (those with at: install in the store of
// the revision tend starts with, which was never installed beside another), at a
// re-prepare (reprepare.go) those with at: activate: the others ran at install.
func (sv *Supervisor) runInitContainers(ctx context.Context, s *spec.Spec, reprepare bool) error {
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		revDir := ""
		if ic.At == spec.AtInstall {
			if reprepare {
				sv.setInit(i, func(st *status.InitContainer) { st.State = status.Succeeded })
				continue
			}
			var err error
			if revDir, err = sv.revisionDir(s.Revision(), ic); err != nil {
				return err
			}
		}
		sv.log.Info().Str("init_container", ic.Name).Msg("running init container")
		err := sv.runInit(ctx, s, ic, revDir, func() { sv.setInit(i, func(st *status.InitContainer) { st.State = status.Running }) },
			func(e proc.Exit, retryIn time.Duration) { sv.initFinished(i, e, retryIn) })
		if err != nil {
			return fmt.Errorf("init container %q: %w", ic.Name, err)
		}
	}
	return nil
}

// revisionDir makes the store of revision id for an init container with at: install
// ({REVISION_DIR}); it needs the store. One that runs as another user owns it, so
// that it may write there.
func (sv *Supervisor) revisionDir(id string, ic *spec.InitContainer) (string, error) {
	st := sv.rev.store
	if st.Disabled != nil {
		return "", fmt.Errorf("init container %q: at: install runs in the revision's store, which cannot be made in instance.dir: %w", ic.Name, st.Disabled)
	}
	if err := st.MakeDir(id); err != nil {
		return "", fmt.Errorf("init container %q: %w", ic.Name, err)
	}
	if who := ic.Identity(); who != nil && who.HasUser {
		if err := st.Chown(id, int(who.UID), int(who.GID)); err != nil {
			return "", fmt.Errorf("init container %q: %w", ic.Name, err)
		}
	}
	return st.Dir(id), nil
}

// runInit runs one init container until it exits 0 or ctx ends: started is called
// before every run, finished after it. One with at: install runs in revDir (its
// working_dir, if set, with {REVISION_DIR} as revDir), REVISION_DIR in its
// environment.
func (sv *Supervisor) runInit(ctx context.Context, s *spec.Spec, ic *spec.InitContainer, revDir string, started func(), finished func(proc.Exit, time.Duration)) error {
	mark := proc.NewRunMark(realDir(s.Instance.Dir), ic.Name)
	env := s.ProcessEnvAs(ic.Env, ic.Identity())
	dir := s.WorkDir(ic.WorkingDir)
	argv := func() ([]string, error) { return spec.Argv(ic.Command, env) }
	if ic.At == spec.AtInstall {
		env = revisionEnv(env, revDir)
		dir = revisionWorkDir(s, ic.WorkingDir, revDir)
		argv = func() ([]string, error) {
			args, err := spec.Argv(ic.Command, env)
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], spec.RevisionDirMark, revDir)
			}
			return args, err
		}
	}
	env = proc.WithRunMark(env, mark)
	ring := sv.logs.ring(ic.Name, spec.DefaultKeepLines)
	g, err := sv.initCgroup(ic.Name)
	if err != nil {
		return err
	}
	defer sv.removeInitCgroup(g, ic.Name)
	return container.RunUntilSuccess(ctx, argv,
		proc.Cmd{
			Env:    env,
			Dir:    dir,
			Stdout: output.NewLineWriter(ic.Name, sv.stdout, nil).WithRing(ring, false),
			Stderr: output.NewLineWriter(ic.Name, sv.stderr, nil).WithRing(ring, true),
			Ident:  ic.Identity(),
			Cgroup: placeIn(g),
		},
		restart.FromSpec(ic.TimeLimit),
		started,
		func(e proc.Exit, retryIn time.Duration) {
			sv.emptyInitCgroup(g, ic.Name) // before the run counts (docs/reference.md "Cgroups and limits")
			sv.killMarked(mark, ic.Name)
			finished(e, retryIn)
		})
}

// revisionEnv is env with {REVISION_DIR} in its values as revDir, and REVISION_DIR
// set to it.
func revisionEnv(env []string, revDir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		out = append(out, strings.ReplaceAll(kv, spec.RevisionDirMark, revDir))
	}
	return append(out, spec.VarRevisionDir+"="+revDir)
}

// revisionWorkDir is the working directory of an init container with at: install:
// the revision's store, or its working_dir with {REVISION_DIR} as the store.
func revisionWorkDir(s *spec.Spec, workingDir, revDir string) string {
	if workingDir == "" {
		return revDir
	}
	if strings.Contains(workingDir, spec.RevisionDirMark) {
		return filepath.Clean(strings.ReplaceAll(workingDir, spec.RevisionDirMark, revDir))
	}
	return s.WorkDir(workingDir)
}

// initFinished records one run of init container i. Between failed tries it is in
// backoff and installed says which one fails, how, and when it runs again.
func (sv *Supervisor) initFinished(i int, e proc.Exit, retryIn time.Duration) {
	now := time.Now()
	x := container.ExitStatus(e, "", now)
	name := sv.spec.InitContainers[i].Name
	var attempts int
	sv.setInit(i, func(st *status.InitContainer) {
		st.Attempts++
		st.LastExit = x
		attempts = st.Attempts
		if e.Success() {
			st.State = status.Succeeded
			sv.installed.Set(false, status.ReasonPreparing, "", now)
			return
		}
		st.State = status.Backoff
		sv.installed.Set(false, status.ReasonInitContainerFailing,
			fmt.Sprintf("%s: %s (try %d), next try in %v", name, e, st.Attempts, retryIn.Round(time.Millisecond)), now)
	})
	ev := sv.log.Info()
	if !e.Success() {
		ev = sv.log.Warn().Int("try", attempts).Dur("retry_in_ms", retryIn)
	}
	ev.Str("init_container", name).Str("exit", e.String()).Msg("init container finished")
}

func (sv *Supervisor) setInit(i int, f func(*status.InitContainer)) {
	sv.mu.Lock()
	f(&sv.inits[i])
	sv.mu.Unlock()
	sv.notify()
}
