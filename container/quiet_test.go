package container

import (
	"syscall"
	"testing"

	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/status"
)

// asked: which exits end a stop that was asked for (a Normal event), which are failures.
func TestAskedExit(t *testing.T) {
	term, kill, code1 := proc.Exit{Signal: syscall.SIGTERM}, proc.Exit{Signal: syscall.SIGKILL}, proc.Exit{Code: 1}
	tests := []struct {
		name   string
		state  state
		reason status.ExitReason
		exit   proc.Exit
		want   bool
	}{
		{"tend stop, SIGTERM → asked", stateStopping, "", term, true},
		{"tend restart, SIGTERM → asked", stateRestarting, "", term, true},
		{"shutdown, exit 1 on its TERM handler → asked", stateShuttingDown, "", code1, true},
		{"tend stop, SIGKILL after the term timeout → a failure", stateStopping, "", kill, false},
		{"restart by memory_restart → a failure", stateRestarting, status.ExitMemoryRestart, term, false},
		{"a liveness kill → a failure", stateRestarting, "liveness probe failed", term, false},
		{"max_run_ms → a failure", stateDeadlineStopping, "", term, false},
		{"a crash while running → a failure", stateRunning, "", code1, false},
	}
	for _, tt := range tests {
		if got := asked(tt.state, tt.reason, tt.exit); got != tt.want {
			t.Errorf("%s: asked = %v", tt.name, got)
		}
	}
}

// impliedTransition: the condition changes the log leaves to the line of their cause.
func TestImpliedTransition(t *testing.T) {
	tests := []struct {
		name string
		next status.Condition
		want bool
	}{
		{"alive as it starts", status.Condition{Status: "True", Reason: status.ReasonRunning}, true},
		{"ready as it starts, no readiness check", status.Condition{Status: "True", Reason: status.ReasonRunning}, true},
		{"ready by its probe → logged", status.Condition{Status: "True", Reason: status.ReasonReady}, false},
		{"not ready: its probe failed → logged", status.Condition{Status: "False", Reason: status.ReasonReadinessProbeFailed}, false},
		{"not alive: exited", status.Condition{Status: "False", Reason: status.ReasonExited}, true},
		{"not ready: stopping", status.Condition{Status: "False", Reason: status.ReasonStopping}, true},
		{"ready while stopped by request", status.Condition{Status: "True", Reason: status.ReasonStoppedByRequest}, true},
		{"not alive: killed → logged", status.Condition{Status: "False", Reason: status.ReasonKilled}, false},
	}
	for _, tt := range tests {
		if got := impliedTransition(tt.next); got != tt.want {
			t.Errorf("%s: impliedTransition = %v", tt.name, got)
		}
	}
}
