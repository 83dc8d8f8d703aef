package container

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// notifySocket is the NOTIFY_SOCKET of a run of a container (systemd's sd_notify
// protocol, docs/reference.md "Readiness by notification"): a unix datagram socket in
// the abstract namespace, of this run alone. The kernel stamps every datagram with
// the sender's credentials (SO_PASSCRED); a message is believed only from the run's
// process or a process in its process group.
type notifySocket struct {
	conn *net.UnixConn
	addr string // "@tend-..." as NOTIFY_SOCKET names it
}

// notifyMsg is one datagram of a believable sender.
type notifyMsg struct {
	run  uint64            // the run whose socket it came on
	pid  int               // the sender
	pgrp int               // its process group; 0 when it exited before it could be read
	keys map[string]string // READY=1, STATUS=..., STOPPING=1, WATCHDOG=1 ...
}

func openNotifySocket(container string) (*notifySocket, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	// Abstract: no file to clean up or to make reachable for another user, and no
	// path length limit from instance.dir.
	addr := fmt.Sprintf("@tend-%d-%s-%s", os.Getpid(), container, hex.EncodeToString(rnd[:]))
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	var sockErr error
	if err := raw.Control(func(fd uintptr) {
		sockErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil || sockErr != nil {
		conn.Close()
		return nil, fmt.Errorf("notify socket: SO_PASSCRED: %v %v", err, sockErr)
	}
	return &notifySocket{conn: conn, addr: addr}, nil
}

// serve reads datagrams until the socket is closed and sends each one with its
// sender's credentials, tagged with run, to out; done stops the sending when nobody
// reads any more.
func (s *notifySocket) serve(out chan<- notifyMsg, done <-chan struct{}, run uint64) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for {
		n, oobn, _, _, err := s.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return // closed
		}
		cred := credentials(oob[:oobn])
		if cred == nil {
			continue
		}
		msg := notifyMsg{run: run, pid: int(cred.Pid), pgrp: processGroup(int(cred.Pid)), keys: parseNotify(buf[:n])}
		select {
		case out <- msg:
		case <-done:
			return
		}
	}
}

func (s *notifySocket) close() { s.conn.Close() }

func credentials(oob []byte) *unix.Ucred {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	for _, m := range msgs {
		if cred, err := unix.ParseUnixCredentials(&m); err == nil {
			return cred
		}
	}
	return nil
}

// processGroup reads the process group of pid from /proc; 0 when pid is gone.
func processGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0
	}
	pgrp, _ := strconv.Atoi(f[2])
	return pgrp
}

// parseNotify splits a datagram into its KEY=VALUE lines.
func parseNotify(b []byte) map[string]string {
	keys := map[string]string{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if k, v, ok := bytes.Cut(line, []byte{'='}); ok && len(k) > 0 {
			keys[string(k)] = string(v)
		}
	}
	return keys
}
