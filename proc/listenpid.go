package proc

import (
	"os"
	"strconv"
)

// listenPIDUnset is an Env entry the exec shim fills with the process's own pid:
// systemd's socket activation protocol (sd_listen_fds(3)) has the process check
// LISTEN_PID against its pid, which only exists after the fork, and syscall.ForkExec
// takes the environment before it. A process with it starts through the shim, which
// knows its pid and keeps it across its execve.
const listenPIDUnset = "LISTEN_PID="

func wantsListenPID(env []string) bool {
	for _, kv := range env {
		if kv == listenPIDUnset {
			return true
		}
	}
	return false
}

// withListenPID is env with an empty LISTEN_PID set to this process's pid.
func withListenPID(env []string) []string {
	for i, kv := range env {
		if kv == listenPIDUnset {
			env[i] = listenPIDUnset + strconv.Itoa(os.Getpid())
		}
	}
	return env
}
