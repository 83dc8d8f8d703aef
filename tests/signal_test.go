package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signalRecorder is a bash program that traps every catchable signal but SIGCHLD (its own children end), writes the
// number of the first one it gets to {DIR}/NAME.sig and exits 0.
const signalRecorder = `for s in $(seq 1 64); do case $s in 9|17|19|32|33) continue;; esac; ` +
	`trap "echo $s > {DIR}/%[1]s.sig; exit 0" $s; done; touch {DIR}/%[1]s.up; sleep 600 & wait $!`

// Every spelling of a signal that validates is delivered as that signal by a
// unix_signal stop handler (the names without a Go constant once sent signal 0).
func TestUnixSignalSpellingsAreDelivered(t *testing.T) {
	want := map[string]int{
		"SIGRTMIN+3": 37, "RTMAX-1": 63, "SIGIOT": 6, "SIGPOLL": 29, "INT": 2,
		"sigusr2": 12, "SIGRTMIN": 34, "SIGRTMAX": 64,
	}
	var sb strings.Builder
	sb.WriteString("containers:\n")
	i := 0
	names := map[string]string{}
	for spelling := range want {
		name := fmt.Sprintf("c%d", i)
		i++
		names[spelling] = name
		fmt.Fprintf(&sb, `  - name: %s
    command: ["bash", "-c", %q]
    stop_policy:
      unix_signal: {signal: "%s"}
      time_limit: {min_restart_period_ms: 20000}
`, name, fmt.Sprintf(signalRecorder, name), spelling)
	}
	tp := start(t, sb.String())
	for _, name := range names {
		waitFile(t, 10*time.Second, filepath.Join(tp.dir, name+".up"))
	}
	termAndWait(t, tp, 15*time.Second)
	for spelling, num := range want {
		got := strings.TrimSpace(waitFile(t, time.Second, filepath.Join(tp.dir, names[spelling]+".sig")))
		if got != fmt.Sprint(num) {
			t.Errorf("unix_signal %q delivered signal %s, want %d", spelling, got, num)
		}
	}
}
