package supervisor

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/container"
)

// A changed container takes its new spec start first only with update: start_first,
// and when nothing it holds beyond its processes changed: its sockets, log settings,
// limits, schedule. Otherwise the reload replaces it stop-first.
func TestUpdatesStartFirst(t *testing.T) {
	const base = `
instance: {name: test}
containers:
  - name: web
    command: "sleep 1"
    sockets: [{listen: "127.0.0.1:8080"}]
    update: start_first
`
	tests := []struct {
		name, from, to string
		want           bool
	}{
		{"command", `"sleep 1"`, `"sleep 2"`, true},
		{"stop_first", "start_first", "stop_first", false},
		{"sockets", "8080", "8081", false},
		{"log", "    update:", "    log: {file: web.log}\n    update:", false},
		{"limits", "    update:", "    limits: {memory: 64Mi}\n    update:", false},
		{"removed", "    update:", "    target_state: removed\n    update:", false},
	}
	dir := t.TempDir()
	prev := loadSpec(t, dir, "prev.yaml", base)
	sv := &Supervisor{log: zerolog.Nop()}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := loadSpec(t, dir, "next.yaml", strings.Replace(base, tc.from, tc.to, 1))
			oc, err := container.New(container.Config{Spec: &prev.Containers[0], Sockets: container.NewSockets(prev, &prev.Containers[0])})
			if err != nil {
				t.Fatal(err)
			}
			defer oc.Discard()
			if got := sv.updatesStartFirst(next, oc, &next.Containers[0]); got != tc.want {
				t.Errorf("updatesStartFirst = %v, want %v", got, tc.want)
			}
		})
	}
}
