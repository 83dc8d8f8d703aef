package container

import "os"

// uid is the user the container's processes run as: a notify message from a sender
// that exited is believed from this user only.
func (l *loop) uid() int {
	if id := l.sc.Identity(); id != nil && id.HasUser {
		return int(id.UID)
	}
	return os.Getuid()
}
