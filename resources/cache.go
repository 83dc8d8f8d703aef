package resources

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
)

// CacheDir is where, in instance.dir, content kept for reuse lives (docs/reference.md
// "Removed resources and the cache").
const CacheDir = ".tend/cache"

// Cache keeps content that left instance.dir for a later spec that names it again:
// each entry is the content (a file or a directory) and a JSON record beside it,
// <id> and <id>.json, in CacheDir. Every path goes through internal/beneath (the
// directory may belong to a container's user). Put and Take are safe for concurrent
// use; the least recently used entries go first when the total exceeds the bound.
type Cache struct {
	root     string // instance.dir
	dir      string // root/CacheDir
	maxBytes int64  // 0: no bound
	log      zerolog.Logger

	mu sync.Mutex // one Put, Take or eviction at a time
}

// CacheKey says what content is: resources with the same uuid are the same content;
// without one the same checksum is, and for EMPTY: the same urls.
type CacheKey struct {
	UUID     string   `json:"uuid,omitempty"`
	Checksum string   `json:"checksum"`
	URLs     []string `json:"urls,omitempty"`
	Extract  bool     `json:"extract"`
}

// matches reports whether content of key k is what want asks for.
func (k CacheKey) matches(want CacheKey) bool {
	if k.Extract != want.Extract {
		return false
	}
	switch {
	case want.UUID != "" && k.UUID == want.UUID:
		return true
	case want.Checksum != "" && !isEmptyChecksum(want.Checksum):
		return strings.EqualFold(k.Checksum, want.Checksum)
	default:
		return want.UUID == "" && k.UUID == "" && isEmptyChecksum(k.Checksum) && slices.Equal(k.URLs, want.URLs)
	}
}

func isEmptyChecksum(s string) bool { return strings.EqualFold(s, "EMPTY:") }

// cacheEntry is the record <id>.json of one entry.
type cacheEntry struct {
	ID   string   `json:"-"`
	Key  CacheKey `json:"key"`
	Name string   `json:"name"` // the resource it was, for the log
	// Digest is what the content held when it entered: FileDigest of a file, the
	// tree digest of a directory. Take hands out only content that still matches.
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
	Used   int64  `json:"used"` // Unix nanoseconds when it entered (its last use)
}

// OpenCache returns the cache of instance.dir root, bounded by maxBytes (0: none).
// Nothing is created until something is put in.
func OpenCache(root string, maxBytes int64, log zerolog.Logger) *Cache {
	return &Cache{root: root, dir: filepath.Join(root, CacheDir), maxBytes: maxBytes, log: log}
}

// Put moves the content at path (beneath root, a file or a directory that matches
// digest) into the cache as key, then evicts least recently used entries beyond the
// bound (this one too, when it alone is larger). On an error the content is removed.
func (c *Cache) Put(path string, key CacheKey, name, digest string, size int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := beneath.MkdirAll(c.root, c.dir, 0o700)
	if err != nil {
		_ = beneath.RemoveAll(c.root, path)
		return fmt.Errorf("cache: %w", err)
	}
	d.Close()
	e := cacheEntry{ID: randomSuffix(), Key: key, Name: name, Digest: digest, Bytes: size, Used: time.Now().UnixNano()}
	for _, old := range c.entries() { // one entry per content: the newer wins
		if old.Key.matches(key) && key.matches(old.Key) {
			c.remove(old)
		}
	}
	if err := beneath.Rename(c.root, path, filepath.Join(c.dir, e.ID)); err != nil {
		_ = beneath.RemoveAll(c.root, path)
		return fmt.Errorf("cache: %w", err)
	}
	if err := c.write(e); err != nil {
		_ = beneath.RemoveAll(c.root, filepath.Join(c.dir, e.ID))
		return fmt.Errorf("cache: %w", err)
	}
	c.log.Info().Str("resource", name).Int64("bytes", size).Msg("resource kept in the cache")
	c.evictLocked()
	return nil
}

// Take moves the most recent entry that matches key and still holds what it held
// when it entered to dst (beneath root, a name nothing else uses), and returns its
// digest and whether there was one. An entry that changed is removed.
func (c *Cache) Take(key CacheKey, dst string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.entries()
	slices.SortFunc(list, func(a, b cacheEntry) int { return cmp.Compare(b.Used, a.Used) }) // the newest first
	for _, e := range list {
		if !e.Key.matches(key) {
			continue
		}
		data := filepath.Join(c.dir, e.ID)
		if err := checkDigest(data, e.Key.Extract, e.Digest); err != nil {
			c.log.Warn().Str("resource", e.Name).Err(err).Msg("a cached resource changed on disk: removed")
			c.remove(e)
			continue
		}
		if err := beneath.Rename(c.root, data, dst); err != nil {
			return "", false, fmt.Errorf("cache: %w", err)
		}
		_ = beneath.RemoveAll(c.root, data+".json")
		return e.Digest, true, nil
	}
	return "", false, nil
}

// Evict removes least recently used entries until the cache is within its bound.
func (c *Cache) Evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked()
}

// Bytes is the size of every entry together.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for _, e := range c.entries() {
		total += e.Bytes
	}
	return total
}

func (c *Cache) evictLocked() {
	if c.maxBytes <= 0 {
		return
	}
	list := c.entries()
	slices.SortFunc(list, func(a, b cacheEntry) int { return cmp.Compare(a.Used, b.Used) }) // the oldest first
	var total int64
	for _, e := range list {
		total += e.Bytes
	}
	for _, e := range list {
		if total <= c.maxBytes {
			return
		}
		c.remove(e)
		total -= e.Bytes
		c.log.Info().Str("resource", e.Name).Int64("bytes", e.Bytes).Int64("cache_max_bytes", c.maxBytes).Msg("evicted from the cache (least recently used)")
	}
}

// entries reads every record; a record without its content (or unreadable) is
// removed with whatever is left of it.
func (c *Cache) entries() []cacheEntry {
	d, err := beneath.OpenDir(c.root, c.dir)
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []cacheEntry
	for _, n := range names {
		id, ok := strings.CutSuffix(n, ".json")
		if !ok {
			if !slices.Contains(names, n+".json") && !strings.HasPrefix(n, ".") {
				_ = beneath.RemoveAll(c.root, filepath.Join(c.dir, n)) // content without a record
			}
			continue
		}
		e, err := c.read(id)
		if err != nil || !slices.Contains(names, id) {
			c.remove(cacheEntry{ID: id})
			continue
		}
		out = append(out, e)
	}
	return out
}

func (c *Cache) read(id string) (cacheEntry, error) {
	f, err := beneath.OpenFile(c.root, filepath.Join(c.dir, id+".json"), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return cacheEntry{}, err
	}
	defer f.Close()
	var e cacheEntry
	if err := json.NewDecoder(f).Decode(&e); err != nil {
		return cacheEntry{}, err
	}
	e.ID = id
	return e, nil
}

func (c *Cache) write(e cacheEntry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(FileData{Root: c.root, Path: filepath.Join(c.dir, e.ID+".json"), Data: append(b, '\n'), Mode: 0o600}, nil)
}

func (c *Cache) remove(e cacheEntry) {
	_ = beneath.RemoveAll(c.root, filepath.Join(c.dir, e.ID+".json"))
	_ = beneath.RemoveAll(c.root, filepath.Join(c.dir, e.ID))
}

// checkDigest reports why the content at path no longer matches digest: the tree
// digest of a directory (extract), FileDigest of a file.
func checkDigest(path string, extract bool, digest string) error {
	var got string
	var err error
	if extract {
		got, err = treeDigest(path)
	} else {
		got, err = FileDigest(path)
	}
	switch {
	case err != nil:
		return err
	case digest == "":
		return errors.New("no digest recorded")
	case got != digest:
		return fmt.Errorf("contents changed on disk (%s, kept as %s)", got, digest)
	}
	return nil
}

// contentSize is the bytes of a file, or of every file in a directory.
func contentSize(path string) int64 {
	var total int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}
