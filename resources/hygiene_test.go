package resources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tend-sh/tend/status"
)

// exists reports whether dir/name is there.
func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

// cacheEntries is the number of entries in dir's cache.
func cacheEntries(t *testing.T, dir string) int {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, CacheDir, "*.json"))
	return len(names)
}

// A resource the spec no longer names is deleted at the next prepare (a restart of
// tend) and at a reload's commit; a cached: true one moves to .tend/cache and is
// taken from there, without a request, when a later spec names it again.
func TestRemovedResourcesDeletedOrCached(t *testing.T) {
	srv := newServer(t)
	srv.file("/conf", []byte("conf\n"))
	srv.file("/model", []byte("the model\n"))
	srv.file("/geo", []byte("geo data\n"))
	dir := t.TempDir()
	ctx := context.Background()
	both := fmt.Sprintf(`
resources:
  - {name: conf.txt, urls: ["%s/conf"]}
  - {name: model.bin, urls: ["%s/model"], cached: true}
  - {name: geo.bin, urls: ["%s/geo"], cached: true, checksum: %q}
containers: []
`, srv.URL, srv.URL, srv.URL, md5sum([]byte("geo data\n")))
	none := "containers: []\n"

	// Dropped while tend was not running: the next start-up's prepare.
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(ctx, loadSpec(t, dir, both)); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m = newManager(t, &syncBuffer{})
	if err := m.Prepare(ctx, loadSpec(t, dir, none)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"conf.txt", ".conf.txt.tend.json", "model.bin", ".model.bin.tend.json", "geo.bin", ".geo.bin.tend.json"} {
		if exists(dir, name) {
			t.Errorf("%s is still in instance.dir", name)
		}
	}
	if n := cacheEntries(t, dir); n != 2 {
		t.Errorf("cache entries = %d, want 2 (model.bin, geo.bin)", n)
	}

	// Named again: from the cache, no request; conf.txt, not cached, is fetched.
	if err := m.Prepare(ctx, loadSpec(t, dir, both)); err != nil {
		t.Fatal(err)
	}
	checkContent(t, filepath.Join(dir, "model.bin"), []byte("the model\n"))
	checkContent(t, filepath.Join(dir, "geo.bin"), []byte("geo data\n"))
	if a, b, c := srv.count("/model"), srv.count("/geo"), srv.count("/conf"); a != 1 || b != 1 || c != 2 {
		t.Errorf("requests model %d geo %d conf %d, want 1 1 2", a, b, c)
	}
	if n := cacheEntries(t, dir); n != 0 {
		t.Errorf("cache entries = %d after taking them back, want 0", n)
	}

	// A reload that drops them: at the commit.
	st, err := m.StageStatic(ctx, loadSpec(t, dir, none))
	if err != nil {
		t.Fatal(err)
	}
	if !exists(dir, "conf.txt") {
		t.Errorf("conf.txt removed before the commit")
	}
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if exists(dir, "conf.txt") || exists(dir, "model.bin") || cacheEntries(t, dir) != 2 {
		t.Errorf("after the reload: conf.txt %v, model.bin %v, cache entries %d; want gone, gone, 2", exists(dir, "conf.txt"), exists(dir, "model.bin"), cacheEntries(t, dir))
	}

	// A cached file changed on disk is not handed out: fetched again.
	entries, _ := filepath.Glob(filepath.Join(dir, CacheDir, "*"))
	for _, e := range entries {
		if !strings.HasSuffix(e, ".json") {
			if b, _ := os.ReadFile(e); string(b) == "the model\n" {
				os.WriteFile(e, []byte("the fake!\n"), 0o644)
			}
		}
	}
	st, err = m.StageStatic(ctx, loadSpec(t, dir, both))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	checkContent(t, filepath.Join(dir, "model.bin"), []byte("the model\n"))
	if a, b := srv.count("/model"), srv.count("/geo"); a != 2 || b != 1 {
		t.Errorf("requests model %d geo %d, want 2 (changed in the cache) and 1", a, b)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

// An abandoned reload puts what it took from the cache back.
func TestAbandonedReloadPutsCachedBack(t *testing.T) {
	srv := newServer(t)
	srv.file("/model", []byte("the model\n"))
	dir := t.TempDir()
	ctx := context.Background()
	with := fmt.Sprintf("resources: [{name: model.bin, urls: [%q], cached: true}]\ncontainers: []\n", srv.URL+"/model")
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(ctx, loadSpec(t, dir, with)); err != nil {
		t.Fatal(err)
	}
	st, _ := m.StageStatic(ctx, loadSpec(t, dir, "containers: []\n"))
	st.Commit()
	st, err := m.StageStatic(ctx, loadSpec(t, dir, with))
	if err != nil {
		t.Fatal(err)
	}
	st.Abandon()
	if n := cacheEntries(t, dir); n != 1 || exists(dir, "model.bin") {
		t.Errorf("after an abandoned reload: cache entries %d, model.bin %v; want 1, false", n, exists(dir, "model.bin"))
	}
}

// cache_max_bytes: the least recently used entries go first.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	srv := newServer(t)
	body := []byte(strings.Repeat("x", 100))
	dir := t.TempDir()
	ctx := context.Background()
	m := newManager(t, &syncBuffer{})
	one := func(name string) string {
		return fmt.Sprintf("instance: {cache_max_bytes: 250}\nresources: [{name: %s, urls: [%q], cached: true}]\ncontainers: []\n", name, srv.file("/"+name, body))
	}
	if err := m.Prepare(ctx, loadSpec(t, dir, one("a"))); err != nil {
		t.Fatal(err)
	}
	// Each reload drops the one before: a, then b, then c enter the cache in order.
	for _, next := range []string{"b", "c", "d"} {
		st, err := m.StageStatic(ctx, loadSpec(t, dir, one(next)))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if n, total := cacheEntries(t, dir), m.currentCache().Bytes(); n != 2 || total != 200 {
		t.Errorf("cache: %d entries, %d bytes; want 2 (b and c: a evicted), 200", n, total)
	}
	// a was evicted: fetched again (d enters the cache, b the oldest goes); c is
	// still there.
	for _, step := range []struct {
		name string
		want int
	}{{"a", 2}, {"c", 1}, {"b", 2}} {
		name, want := step.name, step.want
		st, err := m.StageStatic(ctx, loadSpec(t, dir, one(name)))
		if err != nil {
			t.Fatal(err)
		}
		st.Commit()
		if got := srv.count("/" + name); got != want {
			t.Errorf("requests for %s = %d, want %d", name, got, want)
		}
	}
}

// Resources with the same uuid are the same content: fetched once, whatever their urls.
func TestSameUUIDFetchedOnce(t *testing.T) {
	srv := newServer(t)
	srv.file("/one", []byte("starter\n"))
	srv.file("/two", []byte("starter\n"))
	dir := t.TempDir()
	m := newManager(t, &syncBuffer{})
	text := fmt.Sprintf(`
resources:
  - {name: a, urls: ["%s/one"], uuid: starter-1.0}
  - {name: b, urls: ["%s/two"], uuid: starter-1.0}
  - {name: c, urls: ["%s/one"], uuid: starter-1.0}
containers: []
`, srv.URL, srv.URL, srv.URL)
	if err := m.Prepare(context.Background(), loadSpec(t, dir, text)); err != nil {
		t.Fatal(err)
	}
	if n := srv.count("/one") + srv.count("/two"); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	for _, name := range []string{"a", "b", "c"} {
		checkContent(t, filepath.Join(dir, name), []byte("starter\n"))
	}
}

// size is checked against the free space less what downloads under way reserved;
// a resource that does not fit fails with reason InsufficientDisk and is not fetched.
func TestSizeReservesFreeSpace(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	m := newManager(t, &syncBuffer{})
	old := freeSpace
	t.Cleanup(func() { freeSpace = old })
	freeSpace = func(string) (int64, [2]int32, error) { return 1000, [2]int32{1, 2}, nil }
	s := loadSpec(t, dir, fmt.Sprintf("resources: [{name: a, urls: [%q], size: 600}, {name: b, urls: [%q], size: 600}]\ncontainers: []\n", srv.file("/a", []byte("a")), srv.file("/b", []byte("b"))))
	ra, _ := newStatic(s, s.Resources[0])
	rb, _ := newStatic(s, s.Resources[1])
	release, err := m.reserve(ra)
	if err != nil {
		t.Fatal(err)
	}
	var disk *InsufficientDiskError
	if _, err := m.reserve(rb); !errors.As(err, &disk) || !strings.HasPrefix(err.Error(), "InsufficientDisk: ") {
		t.Errorf("b beside a's reservation: %v, want InsufficientDisk", err)
	}
	release()
	if release, err := m.reserve(rb); err != nil {
		t.Errorf("b after a's release: %v", err)
	} else {
		release()
	}

	freeSpace = func(string) (int64, [2]int32, error) { return 500, [2]int32{1, 2}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Prepare(ctx, s) }()
	waitFor(t, "a failed with InsufficientDisk", func() (bool, string) {
		st := staticStatus(m, "a")
		return st.State == status.ResourceFailed && strings.HasPrefix(st.Reason, "InsufficientDisk: ") && m.FailingReason() == "InsufficientDisk", fmt.Sprintf("%+v", st)
	})
	cancel()
	<-done
	if n := srv.count("/a") + srv.count("/b"); n != 0 {
		t.Errorf("requests = %d, want none", n)
	}
}
