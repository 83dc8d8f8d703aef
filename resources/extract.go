package resources

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafeArchive is wrapped by every rejection of an archive entry.
var ErrUnsafeArchive = errors.New("unsafe archive")

// extractLimits bound what one archive may unpack to, and so the memory extraction
// takes: entries are streamed, and the only thing kept per entry is a symlink's
// path (for the final check), bounded by nameBytes.
type extractLimits struct {
	bytes     int64 // total size of regular files
	entries   int
	nameBytes int64 // total length of entry names and link targets
}

// limitsFor is the bound for an archive of size n (see Options.MaxExtractRatio).
func (o Options) limitsFor(n int64) extractLimits {
	return extractLimits{bytes: max(o.MinExtractBound, o.MaxExtractRatio*n), entries: o.MaxExtractEntries, nameBytes: o.MaxExtractNameBytes}
}

// extract unpacks the .tar, .tar.gz/.tgz or .zip archive at archive (told apart by
// their first bytes, not their names) into the existing empty directory root.
// Entries with absolute paths or ".." components, entries below a symlink, and
// symlinks or hardlinks that lead outside root are rejected; device files and fifos
// are skipped (their count is returned); setuid, setgid and sticky bits are dropped
// and ownership is not restored. An archive unpacking to more than lim bytes,
// entries or name bytes is rejected as a bomb.
func extract(archive, root string, lim extractLimits) (skipped int, err error) {
	f, err := os.Open(archive)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	x := &extractor{root: root, lim: lim}
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(bufio.NewReaderSize(f, copyBuffer))
		if err != nil {
			return 0, fmt.Errorf("gzip: %w", err)
		}
		err = x.tar(tar.NewReader(gz))
		if err != nil {
			return x.skipped, err
		}
	case isZip(head):
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		if err := x.zip(f, fi.Size()); err != nil {
			return x.skipped, err
		}
	default:
		if err := x.tar(tar.NewReader(bufio.NewReaderSize(f, copyBuffer))); err != nil {
			return x.skipped, err
		}
	}
	return x.skipped, x.finish()
}

// extractor writes entries below root and remembers what it must check at the end.
type extractor struct {
	root      string
	lim       extractLimits
	written   int64
	entries   int
	nameBytes int64
	skipped   int
	symlinks  []string // relative paths, checked once everything exists
}

func (x *extractor) tar(tr *tar.Reader) error {
	for first := true; ; first = false {
		h, err := tr.Next()
		if err == io.EOF {
			if first {
				return errors.New("empty or not a tar, tar.gz or zip archive")
			}
			return nil
		}
		if err != nil {
			if first {
				return fmt.Errorf("not a tar, tar.gz or zip archive: %w", err)
			}
			return fmt.Errorf("tar: %w", err)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			err = x.dir(h.Name, mode)
		case tar.TypeReg, tar.TypeGNUSparse: // the reader reports the old TypeRegA as TypeReg
			err = x.file(h.Name, mode, tr)
		case tar.TypeSymlink:
			err = x.symlink(h.Name, h.Linkname)
		case tar.TypeLink:
			err = x.hardlink(h.Name, h.Linkname)
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			x.skipped++
		default: // global PAX headers and the like carry no file
		}
		if err != nil {
			return err
		}
	}
}

func (x *extractor) zip(f io.ReaderAt, size int64) error {
	d, err := findZipDir(f, size)
	if err != nil {
		return err
	}
	// The count is known up front: no need to unpack a million entries first.
	if d.entries > uint64(x.lim.entries) {
		return x.tooMany()
	}
	z := &zipReader{r: f}
	return zipEntries(f, d, func(e *zipEntry) error {
		mode := e.mode
		switch {
		case mode.IsDir() || strings.HasSuffix(e.name, "/"):
			return x.dir(e.name, mode.Perm())
		case mode&fs.ModeSymlink != 0:
			r, err := z.open(e)
			if err != nil {
				return err
			}
			target, err := readSmall(e.name, r)
			if err != nil {
				return err
			}
			return x.symlink(e.name, string(target))
		case mode.IsRegular():
			if mode.Perm() == 0 { // written by a tool that records no permissions
				mode |= 0o644
			}
			r, err := z.open(e)
			if err != nil {
				return err
			}
			return x.file(e.name, mode.Perm(), r)
		default:
			x.skipped++
			return nil
		}
	})
}

// readSmall reads a zip symlink's target.
func readSmall(name string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4097))
	if len(b) > 4096 {
		return nil, fmt.Errorf("%w: entry %q: symlink target too long", ErrUnsafeArchive, name)
	}
	return b, err
}

// rel checks an entry name and returns it as a clean relative path ("" for the root).
func (x *extractor) rel(name string) (string, error) {
	x.entries++
	if x.entries > x.lim.entries {
		return "", x.tooMany()
	}
	if err := x.countName(name); err != nil {
		return "", err
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: entry %q has an absolute path", ErrUnsafeArchive, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: entry %q leads outside the target (..)", ErrUnsafeArchive, name)
		}
	}
	rel := filepath.Clean(name)
	if rel == "." {
		return "", nil
	}
	return rel, nil
}

func (x *extractor) tooMany() error {
	return fmt.Errorf("%w: more than %d entries (archive bomb?)", ErrUnsafeArchive, x.lim.entries)
}

// countName adds a name or link target to the total the limits allow.
func (x *extractor) countName(name string) error {
	x.nameBytes += int64(len(name))
	if x.nameBytes > x.lim.nameBytes {
		return fmt.Errorf("%w: more than %d bytes of entry names (archive bomb?)", ErrUnsafeArchive, x.lim.nameBytes)
	}
	return nil
}

// prepare makes the parent directories of rel, refusing to go through a symlink an
// earlier entry created, and removes a non-directory already at rel (a later entry
// of the same name wins, as with tar).
func (x *extractor) prepare(name, rel string) (string, error) {
	parts := strings.Split(rel, string(filepath.Separator))
	p := x.root
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(p, 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", fmt.Errorf("%w: entry %q is below the symlink %q", ErrUnsafeArchive, name, part)
		case !fi.IsDir():
			return "", fmt.Errorf("%w: entry %q is below the file %q", ErrUnsafeArchive, name, part)
		}
	}
	full := filepath.Join(x.root, rel)
	if fi, err := os.Lstat(full); err == nil {
		if fi.IsDir() {
			return "", fmt.Errorf("%w: entry %q would replace a directory", ErrUnsafeArchive, name)
		}
		if err := os.Remove(full); err != nil {
			return "", err
		}
	}
	return full, nil
}

func (x *extractor) dir(name string, mode fs.FileMode) error {
	rel, err := x.rel(name)
	if err != nil || rel == "" {
		return err
	}
	full := filepath.Join(x.root, rel)
	if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
		// An earlier entry made it, or made a symlink on the way to it: the chmod
		// below must not reach through one (it may lead outside).
		if err := x.noSymlinkBelow(rel); err != nil {
			return fmt.Errorf("%w: entry %q: %v", ErrUnsafeArchive, name, err)
		}
	} else {
		if full, err = x.prepare(name, rel); err != nil {
			return err
		}
		if err := os.Mkdir(full, 0o755); err != nil {
			return err
		}
	}
	// The owner keeps full access, so later entries can still be written into a
	// directory the archive makes read-only, and the mode can be set now instead of
	// remembering every directory until the end.
	return os.Chmod(full, mode|0o700)
}

func (x *extractor) file(name string, mode fs.FileMode, r io.Reader) error {
	rel, err := x.rel(name)
	if err != nil {
		return err
	}
	if rel == "" {
		return fmt.Errorf("%w: file entry %q has no name", ErrUnsafeArchive, name)
	}
	full, err := x.prepare(name, rel)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode.Perm())
	if err != nil {
		return err
	}
	left := x.lim.bytes - x.written
	n, err := io.Copy(f, io.LimitReader(r, left+1))
	x.written += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if x.written > x.lim.bytes {
		return fmt.Errorf("%w: unpacks to more than %d bytes (archive bomb?)", ErrUnsafeArchive, x.lim.bytes)
	}
	// OpenFile's mode passes through the umask; the archive's permissions are meant.
	return os.Chmod(full, mode.Perm())
}

func (x *extractor) symlink(name, target string) error {
	rel, err := x.rel(name)
	if err != nil {
		return err
	}
	if rel == "" {
		return fmt.Errorf("%w: symlink entry %q has no name", ErrUnsafeArchive, name)
	}
	if err := x.countName(target); err != nil {
		return err
	}
	if target == "" || filepath.IsAbs(target) {
		return fmt.Errorf("%w: symlink %q points to %q, outside the target", ErrUnsafeArchive, name, target)
	}
	full, err := x.prepare(name, rel)
	if err != nil {
		return err
	}
	if err := os.Symlink(target, full); err != nil {
		return err
	}
	x.symlinks = append(x.symlinks, rel)
	return nil
}

func (x *extractor) hardlink(name, linkname string) error {
	rel, err := x.rel(name)
	if err != nil {
		return err
	}
	x.entries-- // the link target is not an entry of its own
	old, err := x.rel(linkname)
	if err != nil {
		return fmt.Errorf("%w: hardlink %q to %q leads outside the target", ErrUnsafeArchive, name, linkname)
	}
	if rel == "" || old == "" {
		return fmt.Errorf("%w: hardlink %q to %q", ErrUnsafeArchive, name, linkname)
	}
	// The target must be a regular file that an earlier entry wrote, reached without
	// a symlink.
	if err := x.noSymlinkBelow(old); err != nil {
		return fmt.Errorf("%w: hardlink %q to %q: %v", ErrUnsafeArchive, name, linkname, err)
	}
	fi, err := os.Lstat(filepath.Join(x.root, old))
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: hardlink %q to %q: not a file of the archive", ErrUnsafeArchive, name, linkname)
	}
	full, err := x.prepare(name, rel)
	if err != nil {
		return err
	}
	return os.Link(filepath.Join(x.root, old), full)
}

// noSymlinkBelow checks that no parent directory of rel is a symlink.
func (x *extractor) noSymlinkBelow(rel string) error {
	parts := strings.Split(rel, string(filepath.Separator))
	p := x.root
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%q is not a directory", part)
		}
	}
	return nil
}

// finish checks every symlink against the final tree (a later entry may change what
// an earlier symlink resolves to).
func (x *extractor) finish() error {
	for _, rel := range x.symlinks {
		if err := resolveInside(x.root, rel); err != nil {
			return err
		}
	}
	return nil
}

// resolveInside follows the symlink at rel (relative to root) component by
// component, as the kernel would, and fails if any step leaves root. Components
// that do not exist are taken as plain names, so a dangling link is judged by
// where it would lead.
func resolveInside(root, rel string) error {
	pending := strings.Split(rel, "/")
	var stack []string
	for links := 0; len(pending) > 0; {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return fmt.Errorf("%w: symlink %q leads outside the target", ErrUnsafeArchive, rel)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		p := filepath.Join(root, filepath.Join(stack...), c)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			stack = append(stack, c)
			continue
		}
		if links++; links > 255 {
			return fmt.Errorf("%w: symlink %q: too many levels of links", ErrUnsafeArchive, rel)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			return fmt.Errorf("%w: symlink %q leads outside the target", ErrUnsafeArchive, rel)
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return nil
}
