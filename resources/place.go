package resources

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
)

// replace puts staged (a file or a directory beside dst) at dst in one step: a
// rename when dst does not exist, else an exchange of the two (renameat2
// RENAME_EXCHANGE), so dst is never missing and a file may replace a directory or
// the other way round. The old content is then removed. Both directories are
// resolved beneath root (instance.dir) and the renames act on their descriptors: a
// symlink someone put in place of either directory, or at dst, is never followed.
func replace(root, staged, dst string) error {
	sd, sname, err := beneath.OpenParent(root, staged)
	if err != nil {
		return err
	}
	defer sd.Close()
	dd, dname, err := beneath.OpenParent(root, dst)
	if err != nil {
		return err
	}
	defer dd.Close()
	sfd, dfd := int(sd.Fd()), int(dd.Fd())
	rename := func(ofd int, oname string, nfd int, nname string) error {
		if err := unix.Renameat(ofd, oname, nfd, nname); err != nil {
			return &os.LinkError{Op: "rename", Old: staged, New: dst, Err: err}
		}
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, dname, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
		if err := rename(sfd, sname, dfd, dname); err != nil {
			return err
		}
		return dd.Sync()
	}
	old := sname // where the old content ends up
	if err := unix.Renameat2(sfd, sname, dfd, dname, unix.RENAME_EXCHANGE); err != nil {
		// Filesystems without RENAME_EXCHANGE: a plain rename replaces a file or an
		// empty directory atomically; otherwise move the old one aside first.
		if err := rename(sfd, sname, dfd, dname); err != nil {
			old = sname + ".old"
			if err := rename(dfd, dname, sfd, old); err != nil {
				return err
			}
			if err := rename(sfd, sname, dfd, dname); err != nil {
				_ = unix.Renameat(sfd, old, dfd, dname)
				return err
			}
		} else {
			return dd.Sync()
		}
	}
	if err := dd.Sync(); err != nil {
		return err
	}
	return beneath.RemoveAll(root, filepath.Join(filepath.Dir(staged), old))
}

// writeFileAtomic writes data to path (resolved beneath root) through a synced
// temporary file and a rename. The directory may be one a container's user can
// write: it is opened beneath root, the temporary file is created in it with
// O_EXCL|O_NOFOLLOW, its mode is set on the open file, never by name, and the
// rename acts on names in the opened directory, never on a symlink's target.
func writeFileAtomic(root, path string, data []byte) error {
	f, err := createTemp(root, filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
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
		err = replaceFile(root, f.Name(), path)
	}
	if err != nil {
		_ = beneath.RemoveAll(root, f.Name())
	}
	return err
}

// replaceFile renames the file tmp over path, both in the same directory.
func replaceFile(root, tmp, path string) error {
	d, name, err := beneath.OpenParent(root, path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Renameat(int(d.Fd()), filepath.Base(tmp), int(d.Fd()), name); err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return d.Sync()
}

func writeJSONAtomic(root, path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(root, path, append(b, '\n'))
}

// createTemp is os.CreateTemp with dir resolved beneath root: a new file (O_EXCL,
// O_NOFOLLOW, mode 0600) whose name is pattern with its last * made random.
func createTemp(root, dir, pattern string) (*os.File, error) {
	d, err := beneath.OpenDir(root, dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	const flags = unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd := -1
	name, err := tempName(dir, pattern, func(name string) (err error) {
		fd, err = unix.Openat(int(d.Fd()), name, flags, 0o600)
		return err
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// mkdirTemp is os.MkdirTemp with dir resolved beneath root (mode 0700).
func mkdirTemp(root, dir, pattern string) (string, error) {
	d, err := beneath.OpenDir(root, dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	return tempName(dir, pattern, func(name string) error {
		return unix.Mkdirat(int(d.Fd()), name, 0o700)
	})
}

// tempName calls create with random names made of pattern until one is free (its
// last * replaced by decimal digits, which isTempName knows), and returns dir/name.
func tempName(dir, pattern string, create func(name string) error) (string, error) {
	prefix, suffix := pattern, ""
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for range 100 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		name := prefix + strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 10) + suffix // digits, as os.CreateTemp
		err := create(name)
		if err == nil {
			return filepath.Join(dir, name), nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, pattern), Err: err}
		}
	}
	return "", &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, pattern), Err: fs.ErrExist}
}

// chmodBeneath sets the mode of path (resolved beneath root, a symlink at it not
// followed) on the open file, never by name.
func chmodBeneath(root, path string, mode os.FileMode) error {
	f, err := beneath.OpenFile(root, path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(mode)
}

// readBeneath is os.ReadFile of a small state or marker file resolved beneath root.
func readBeneath(root, path string) ([]byte, error) {
	f, err := beneath.OpenFile(root, path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 16<<20))
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

// removeTemps removes every temporary entry a killed tend left in dir (resolved
// beneath root; a partial download stays there for good when the next start wants
// another name or revision). Only names isTempName accepts are touched.
func removeTemps(root, dir string) (removed []string) {
	for _, name := range listBeneath(root, dir) {
		if isTempName(name) && beneath.RemoveAll(root, filepath.Join(dir, name)) == nil {
			removed = append(removed, name)
		}
	}
	return removed
}

// removeStale removes temporary entries a killed tend left in dir for name.
func removeStale(root, dir, name string) {
	pattern := "." + globEscape(name) + ".tend-*"
	for _, n := range listBeneath(root, dir) {
		if ok, _ := filepath.Match(pattern, n); ok {
			_ = beneath.RemoveAll(root, filepath.Join(dir, n))
		}
	}
}

// listBeneath lists the names in dir, resolved beneath root; none when it cannot.
func listBeneath(root, dir string) []string {
	d, err := beneath.OpenDir(root, dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	return names
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}
