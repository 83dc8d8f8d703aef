package container

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// A datagram on the notify socket arrives with its sender's pid and process group and
// the run of the socket, its KEY=VALUE lines split.
func TestNotifySocketCredentials(t *testing.T) {
	s, err := openNotifySocket("web")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	out := make(chan notifyMsg, 1)
	done := make(chan struct{})
	defer close(done)
	go s.serve(out, done, 1)
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: s.addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("READY=1\nSTATUS=warming up: 3/4\nbogus\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-out:
		if m.pid != os.Getpid() || m.pgrp != syscall.Getpgrp() || m.run != 1 {
			t.Errorf("pid %d pgrp %d run %d, want %d %d 1", m.pid, m.pgrp, m.run, os.Getpid(), syscall.Getpgrp())
		}
		if m.keys["READY"] != "1" || m.keys["STATUS"] != "warming up: 3/4" || len(m.keys) != 2 {
			t.Errorf("keys %v", m.keys)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
	}
}
