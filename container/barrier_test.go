package container

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/spec"
)

// loadContainer loads a one-container spec and returns a Container for it (not run).
func loadContainer(t *testing.T, yaml string) *Container {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, spec.Options{Environ: os.Environ(), Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Spec: &s.Containers[0], Env: s.ProcessEnv(nil), Dir: dir, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A WAIT container that is not running is not counted by the TERM barrier, so its
// shutdown must not arrive at it: the barrier stays closed for the IGNORE container
// it counts, whether the WAIT container has a destroy policy or not.
func TestIdleWaitContainerDoesNotArriveAtBarrier(t *testing.T) {
	for name, extra := range map[string]string{
		"no destroy":   "",
		"with destroy": "    destroy_policy: {exec: {command: [\"true\"]}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := loadContainer(t, "containers:\n  - name: w\n    command: [sleep, \"600\"]\n    term_barrier: WAIT\n    target_state: removed\n"+extra)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go c.Run(ctx)
			barrier := NewBarrier(1) // one IGNORE container still to arrive
			c.Shutdown(StopOp{Barriers: []*Barrier{barrier}, Destroy: true})
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the container did not finish")
			}
			select {
			case <-barrier.Open():
				t.Error("a stopped WAIT container opened the barrier of an IGNORE container")
			default:
			}
		})
	}
}
