package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// A second lock of the same directory, by another path to it, is refused naming the
// holder's pid; once released it can be taken again.
func TestInstanceLockNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	first, err := lockInstance(dir, zerolog.Nop())
	if err != nil || first == nil {
		t.Fatalf("first lock: %v", err)
	}
	_, err = lockInstance(link, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "is already run by another tend (pid "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("second lock: %v, want it refused naming pid %d", err, os.Getpid())
	}
	first.release()
	again, err := lockInstance(link, zerolog.Nop())
	if err != nil || again == nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.release()
}
