package supervisor

import (
	"os"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
)

// onSignal is the one rule for signals: the first SIGTERM/SIGINT stops, a second
// (while stopping) kills, SIGHUP reloads except while stopping, the rest do nothing
// for the phase's loop.
func TestOnSignal(t *testing.T) {
	sv := &Supervisor{log: zerolog.Nop()}
	tests := []struct {
		ph   phase
		sig  os.Signal
		want signalAction
	}{
		{phasePreparing, syscall.SIGTERM, signalStop},
		{phasePreparing, syscall.SIGINT, signalStop},
		{phasePreparing, syscall.SIGHUP, signalReload},
		{phasePreparing, syscall.SIGUSR1, signalNone},
		{phaseRunning, syscall.SIGTERM, signalStop},
		{phaseRunning, syscall.SIGINT, signalStop},
		{phaseRunning, syscall.SIGHUP, signalReload},
		{phaseRunning, syscall.SIGUSR2, signalNone}, // forwarded to the containers
		{phaseStopping, syscall.SIGTERM, signalKill},
		{phaseStopping, syscall.SIGINT, signalKill},
		{phaseStopping, syscall.SIGHUP, signalNone},
		{phaseStopping, syscall.SIGUSR1, signalNone},
	}
	for _, tt := range tests {
		if got := sv.onSignal(tt.ph, tt.sig); got != tt.want {
			t.Errorf("onSignal(%d, %v) = %d, want %d", tt.ph, tt.sig, got, tt.want)
		}
	}
}
