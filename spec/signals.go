package spec

import (
	"strconv"
	"strings"
	"syscall"
)

// linuxSignals are the standard Linux signal numbers by name, without "SIG".
var linuxSignals = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "IOT": 6, "BUS": 7,
	"FPE": 8, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14,
	"TERM": 15, "STKFLT": 16, "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21,
	"TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28,
	"IO": 29, "POLL": 29, "PWR": 30, "SYS": 31,
}

// Real-time signals as kill -l names them (glibc keeps 32 and 33 for itself).
const (
	sigRTMin = 34
	sigRTMax = 64
)

// ParseSignal turns a signal name ("SIGINT", "INT", "sigint", "SIGRTMIN+3") into its
// Linux number and canonical name ("SIGINT").
func ParseSignal(name string) (syscall.Signal, string, bool) {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "SIG")
	if num, ok := linuxSignals[n]; ok {
		return syscall.Signal(num), "SIG" + n, true
	}
	base, offset := n, 0
	if i := strings.IndexAny(n, "+-"); i > 0 {
		off, err := strconv.Atoi(n[i+1:])
		if err != nil || off < 0 || n[i+1] == '+' {
			return 0, "", false
		}
		if n[i] == '-' {
			off = -off
		}
		base, offset = n[:i], off
	}
	var num int
	switch {
	case base == "RTMIN" && offset >= 0:
		num = sigRTMin + offset
	case base == "RTMAX" && offset <= 0:
		num = sigRTMax + offset
	default:
		return 0, "", false
	}
	if num < sigRTMin || num > sigRTMax {
		return 0, "", false
	}
	return syscall.Signal(num), "SIG" + n, true
}

// SignalName is the canonical name of sig as kill -l prints it ("SIGTERM",
// "SIGRTMIN+3", "SIGRTMAX-1"): the one spelling used in logs and status, and the one
// ParseSignal returns, so that a name read back parses to the same signal.
func SignalName(sig syscall.Signal) string {
	n := int(sig)
	if name, ok := signalNames[n]; ok {
		return name
	}
	switch {
	case n >= sigRTMin && n <= sigRTMin+15:
		return "SIGRTMIN+" + strconv.Itoa(n-sigRTMin)
	case n > sigRTMin+15 && n <= sigRTMax:
		return "SIGRTMAX-" + strconv.Itoa(sigRTMax-n)
	}
	return "signal " + strconv.Itoa(n)
}

// signalNames maps numbers back to names; where two names share a number (IOT and
// ABRT, POLL and IO) the one kill -l prints wins.
var signalNames = func() map[int]string {
	m := map[int]string{}
	for name, n := range linuxSignals {
		if name == "IOT" || name == "POLL" {
			continue
		}
		m[n] = "SIG" + name
	}
	m[sigRTMin] = "SIGRTMIN"
	m[sigRTMax] = "SIGRTMAX"
	return m
}()

// Number is the signal to send; valid after Load (which checked the name).
func (u UnixSignal) Number() syscall.Signal {
	sig, _, _ := ParseSignal(u.Signal)
	return sig
}
