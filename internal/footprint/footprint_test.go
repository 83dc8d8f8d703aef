package footprint

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// restore puts the runtime settings back as the test found them.
func restore(t *testing.T) {
	gc := debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		runtime.GOMAXPROCS(procs)
	})
}

func TestSettledAfterStartup(t *testing.T) {
	for _, name := range []string{"GOGC", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Skipf("%s=%s is set in the environment", name, v)
		}
	}
	restore(t)
	defer func(d time.Duration) { startupGrace = d }(startupGrace)
	startupGrace = time.Millisecond
	debug.SetGCPercent(100)
	runtime.GOMAXPROCS(2)
	SettleAfterStartup()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gc := debug.SetGCPercent(-1)
		debug.SetGCPercent(gc)
		procs := runtime.GOMAXPROCS(0)
		if gc == steadyGCPercent && procs == steadyProcs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after start-up GOGC = %d, GOMAXPROCS = %d; want %d and %d", gc, procs, steadyGCPercent, steadyProcs)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline: nothing announces the change
	}
}

// The footprint is trimmed once after start-up, and once more after the instance is
// first ready if that comes after the first trim; never more.
func TestTrimmedAgainAfterLateReadiness(t *testing.T) {
	defer func(grace, ready time.Duration, f, k func()) {
		startupGrace, readyGrace, trim, keepTrimmed = grace, ready, f, k
	}(startupGrace, readyGrace, trim, keepTrimmed)
	keepTrimmed = func() {}
	startupGrace, readyGrace = 5*time.Millisecond, 5*time.Millisecond
	var trims atomic.Int32
	trim = func() { trims.Add(1) }
	waitTrims := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for trims.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d trims, want %d", trims.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // ten graces: no further trim comes
		if got := trims.Load(); got != want {
			t.Fatalf("%d trims, want %d", got, want)
		}
	}

	// Ready before the first trim: that trim comes after the first checks anyway.
	trims.Store(0)
	startupGrace = 30 * time.Millisecond
	ready := SettleAfterStartup()
	ready()
	waitTrims(1)

	// Ready after it, twice: one more trim.
	trims.Store(0)
	startupGrace = 5 * time.Millisecond
	ready = SettleAfterStartup()
	waitTrims(1)
	ready()
	ready()
	waitTrims(2)
}

// keepTrimmedEvery collects and hands memory back after a period in which tend
// allocated, and not after one in which it did not.
func TestKeptTrimmedWhenAllocating(t *testing.T) {
	forced := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	count := func() uint64 { metrics.Read(forced); return forced[0].Value.Uint64() }
	go keepTrimmedEvery(20 * time.Millisecond) // runs until the test binary exits

	before := count()
	deadline := time.Now().Add(5 * time.Second)
	for count() == before {
		if time.Now().After(deadline) {
			t.Fatal("no collection forced within 5 s of allocating 4 MB every 10 ms")
		}
		sink = make([]byte, 4<<20)
		time.Sleep(10 * time.Millisecond)
	}
	sink = nil
	time.Sleep(100 * time.Millisecond) // a trim may follow what was allocated above
	before = count()
	time.Sleep(200 * time.Millisecond) // ten periods without allocating
	if n := count() - before; n > 0 {
		t.Errorf("%d collections forced while nothing was allocated", n)
	}
}

var sink []byte

func TestEnvironmentWins(t *testing.T) {
	restore(t)
	t.Setenv("GOGC", "100")
	t.Setenv("GOMAXPROCS", "2")
	debug.SetGCPercent(100)
	runtime.GOMAXPROCS(2)
	settle()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC = %d with GOGC=100 in the environment, want 100", got)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS = %d with GOMAXPROCS=2 in the environment, want 2", got)
	}
}

// cachedPages counts the pages of the file at path that are in the page cache, of
// length bytes at off (0: the whole file).
func cachedPages(t *testing.T, path string, off, length int64) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if length == 0 {
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		length = st.Size()
	}
	b, err := unix.Mmap(int(f.Fd()), off, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestDropCached: the pages of a file that nobody maps leave the page cache, and
// under MADV_RANDOM a fault brings back the page it needs, not its neighbours.
func TestDropCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blob")
	var fs unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &fs); err == nil && fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is a tmpfs, whose pages cannot be dropped")
	}
	const pages = 256
	size := pages * os.Getpagesize()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i / 7)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages are written back, not dropped
		t.Fatal(err)
	}
	if n := cachedPages(t, path, 0, 0); n < pages/2 {
		t.Skipf("only %d of %d pages cached after the write: cannot tell a drop", n, pages)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if err := unix.Madvise(m, unix.MADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	dropCached(path, 0, 0)
	if n := cachedPages(t, path, 0, 0); n > 0 {
		t.Fatalf("%d of %d pages still cached after dropCached, want none", n, pages)
	}
	at := 100*os.Getpagesize() + 5
	if m[at] != data[at] {
		t.Fatal("the mapping reads wrong data after the drop")
	}
	if n := cachedPages(t, path, 0, 0); n > 16 {
		t.Errorf("one fault brought %d pages back to the cache, want only the one it needs", n)
	}
}

// TestAdviseExecutable: after it, the executable's read-only data is mostly out of the
// page cache (what the test still reads comes back page by page). That the code stays
// cannot be told here: the test binary's code is in large folios, which a page of
// them still mapped keeps whole.
func TestAdviseExecutable(t *testing.T) {
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	if err := exe.Sync(); err != nil { // the test binary was just written: dirty pages stay
		t.Skipf("cannot write the test binary back: %v", err)
	}
	var data []mapping
	code := 0
	for _, m := range executableMappings() {
		if m.code {
			code++
		} else {
			data = append(data, m)
		}
	}
	if len(data) == 0 || code == 0 {
		t.Fatalf("mappings of the executable: %d of code, %d of read-only data; want both", code, len(data))
	}
	count := func(maps []mapping) (cached, all int) {
		for _, m := range maps {
			cached += cachedPages(t, "/proc/self/exe", m.off, int64(m.end-m.start))
			all += int(m.end-m.start) / os.Getpagesize()
		}
		return cached, all
	}
	for _, m := range data { // into the page cache (an earlier run may have dropped it)
		if _, err := exe.ReadAt(make([]byte, m.end-m.start), m.off); err != nil {
			t.Fatal(err)
		}
	}
	if cached, all := count(data); cached < all/2 {
		t.Skipf("only %d of %d pages of the read-only data cached after reading it: cannot tell a drop", cached, all)
	}
	AdviseExecutable()
	// What the test and the runtime read meanwhile comes back: about a quarter of the
	// test binary's (89–95 pages of 377–431 in six runs, with and without -race);
	// without the drop all of it stays.
	if cached, all := count(data); cached > all/2 {
		t.Errorf("%d of %d pages of the read-only data still cached, want at most half", cached, all)
	}
}
