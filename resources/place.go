package resources

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// replace puts staged (a file or a directory beside dst) at dst in one step: a
// rename when dst does not exist, else an exchange of the two (renameat2
// RENAME_EXCHANGE), so dst is never missing and a file may replace a directory or
// the other way round. The old content is then removed.
func replace(staged, dst string) error {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(staged, dst); err != nil {
			return err
		}
		return syncDir(filepath.Dir(dst))
	}
	err := unix.Renameat2(unix.AT_FDCWD, staged, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	if err != nil {
		// Filesystems without RENAME_EXCHANGE: a plain rename replaces a file or an
		// empty directory atomically; otherwise move the old one aside first.
		if err := os.Rename(staged, dst); err != nil {
			aside := staged + ".old"
			if err := os.Rename(dst, aside); err != nil {
				return err
			}
			if err := os.Rename(staged, dst); err != nil {
				_ = os.Rename(aside, dst)
				return err
			}
			staged = aside
		} else {
			return syncDir(filepath.Dir(dst))
		}
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return os.RemoveAll(staged)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeFileAtomic writes data to path through a synced temporary file and a rename.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	// The directory may be one a container's user can write: the mode is set on the
	// open file, never by name (a symlink swapped in for the temporary file would
	// make a chmod by name change root's file), CreateTemp's O_EXCL creates and
	// follows nothing, and rename and remove act on names, never on a symlink's target.
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return syncDir(filepath.Dir(path))
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// randomSuffix names temporary entries.
func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// treeDigest is the SHA-256 of a directory tree: every entry's relative path, kind,
// permissions, and a file's content or a symlink's target, in lexical order. It lets
// an extracted resource be re-verified in place.
func treeDigest(root string) (string, error) {
	sum := sha256.New()
	buf := make([]byte, copyBuffer)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(sum, "l %q %q\n", rel, target)
		case d.IsDir():
			fmt.Fprintf(sum, "d %q %o\n", rel, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.CopyBuffer(h, f, buf)
			f.Close()
			if err != nil {
				return err
			}
			fmt.Fprintf(sum, "f %q %o %d %x\n", rel, fi.Mode().Perm(), fi.Size(), h.Sum(nil))
		default:
			fmt.Fprintf(sum, "o %q %s\n", rel, fi.Mode().Type())
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "SHA256:" + hex.EncodeToString(sum.Sum(nil)), nil
}

// isTempName reports whether name is one of the temporary entries tend makes beside
// a resource: ".NAME.tend-part-N" (a download), ".NAME.tend-stage-N" (an archive
// being unpacked, or ".NAME.tend-stage-N.old", moved aside by replace) or
// ".NAME.tend-link-HEX" (a symlink about to replace a destination) or
// ".NAME.tend-file-HEX" (a file of files: being written).
func isTempName(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	name = strings.TrimSuffix(name, ".old")
	for _, kind := range []string{".tend-part-", ".tend-stage-", ".tend-link-", ".tend-file-"} {
		i := strings.LastIndex(name, kind)
		if i < 2 { // ".X" comes first
			continue
		}
		suffix := name[i+len(kind):]
		digits := "0123456789"
		if kind == ".tend-link-" || kind == ".tend-file-" {
			digits += "abcdef"
		}
		if suffix != "" && strings.Trim(suffix, digits) == "" {
			return true
		}
	}
	return false
}

// removeTemps removes every temporary entry a killed tend left in dir (a partial
// download stays there for good when the next start wants another name or
// revision). Only names isTempName accepts are touched.
func removeTemps(dir string) (removed []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if isTempName(e.Name()) && os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			removed = append(removed, e.Name())
		}
	}
	return removed
}

// removeStale removes temporary entries a killed tend left in dir for name.
func removeStale(dir, name string) {
	matches, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(name)+".tend-*"))
	for _, m := range matches {
		os.RemoveAll(m)
	}
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}
