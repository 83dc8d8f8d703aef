package spec

import (
	"syscall"
	"testing"
)

// Every spelling that validates parses to the number Linux gives that signal, and the
// canonical name parses back to the same number.
func TestParseSignalSpellings(t *testing.T) {
	for _, tc := range []struct {
		name string
		want syscall.Signal
	}{
		{"SIGINT", syscall.SIGINT}, {"INT", syscall.SIGINT}, {"sigint", syscall.SIGINT},
		{"SIGIOT", syscall.SIGABRT}, {"SIGABRT", syscall.SIGABRT}, {"SIGPOLL", syscall.SIGIO},
		{"SIGIO", syscall.SIGIO}, {"SIGUSR1", syscall.SIGUSR1}, {"SIGWINCH", syscall.SIGWINCH},
		{"SIGRTMIN", 34}, {"SIGRTMIN+3", 37}, {"RTMIN+3", 37}, {"SIGRTMAX", 64},
		{"SIGRTMAX-1", 63}, {"rtmax-14", 50}, {"SIGRTMIN+30", 64},
	} {
		got, canonical, ok := ParseSignal(tc.name)
		if !ok || got != tc.want {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d", tc.name, got, ok, tc.want)
			continue
		}
		back, _, ok := ParseSignal(SignalName(got))
		if !ok || back != got {
			t.Errorf("SignalName(%d) = %q does not parse back (%d, %v)", got, SignalName(got), back, ok)
		}
		if again, _, _ := ParseSignal(canonical); again != got {
			t.Errorf("canonical %q of %q parses to %d, want %d", canonical, tc.name, again, got)
		}
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGTERM: "SIGTERM", syscall.SIGABRT: "SIGABRT", syscall.SIGIO: "SIGIO",
		34: "SIGRTMIN", 37: "SIGRTMIN+3", 49: "SIGRTMIN+15", 50: "SIGRTMAX-14", 63: "SIGRTMAX-1",
		64: "SIGRTMAX", 99: "signal 99",
	} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}
