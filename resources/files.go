package resources

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/spec"
)

// maxFromFile bounds a from_file: files: holds configuration and secrets, and a
// mistyped path to a disk image must not be read into memory.
const maxFromFile = 16 << 20

// FileData is one file of the spec's files: section, read and ready to write.
// Data may be a secret (from_file): it is never logged, and errors never quote it.
type FileData struct {
	Field string // "files[N]", for messages
	Root  string // instance.dir: a Path beneath it is resolved beneath it
	Path  string // absolute
	Data  []byte
	Mode  os.FileMode
}

// ReadFiles reads the content of every file of s (from_file copied byte for byte,
// content as substituted by Load). It is done before anything is stopped, so that
// an unreadable from_file fails a reload while everything runs; the error names
// the field and the file.
func ReadFiles(s *spec.Spec) ([]FileData, error) {
	var out []FileData
	for i, f := range s.Files {
		fd := FileData{Field: fmt.Sprintf("files[%d]", i), Root: s.Instance.Dir, Path: s.FilePath(f), Mode: f.Perm()}
		if f.Content.IsSet() {
			fd.Data = []byte(f.Content.Get())
		} else {
			data, err := readFromFile(s.Instance.Dir, s.FromFilePath(f))
			if err != nil {
				return nil, fmt.Errorf("%s.from_file: %w", fd.Field, err)
			}
			fd.Data = data
		}
		out = append(out, fd)
	}
	return out, nil
}

// readFromFile reads a regular file of at most maxFromFile bytes, resolved beneath
// root (instance.dir) when it is there. It opens without blocking (a FIFO) and judges
// the opened file. Errors name the path, never the content.
func readFromFile(root, path string) ([]byte, error) {
	f, err := beneath.OpenFile(root, path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxFromFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, maxFromFile>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFromFile+1))
	if err == nil && len(data) > maxFromFile {
		err = fmt.Errorf("%s is larger than %d MiB", path, maxFromFile>>20)
	}
	return data, err
}

// WriteFiles writes every file atomically (WriteFile), owned by id's user and group
// when it has one; the first error stops it.
func WriteFiles(files []FileData, id *spec.Identity) error {
	for _, f := range files {
		if err := WriteFile(f, id); err != nil {
			return fmt.Errorf("%s.path: %w", f.Field, err)
		}
	}
	return nil
}

// WriteFile writes f through a temporary file in the same directory (fsynced, then
// renamed over the target), creating missing parent directories. The directory may
// belong to a container's user, who could put a symlink at any name in it or above
// it: the directory is made and opened beneath f.Root (a symlink leading out of it
// is an error naming the path) and everything happens relative to it, the temporary
// file is created with O_EXCL|O_NOFOLLOW, its mode and owner are set on the open
// file, and renameat replaces whatever is at the final name (a symlink included)
// without following it.
func WriteFile(f FileData, id *spec.Identity) error {
	dir, name := filepath.Split(f.Path)
	d, err := beneath.MkdirAll(f.Root, dir, 0o755)
	if err != nil {
		return err
	}
	defer d.Close()
	dfd := int(d.Fd())
	tmp, err := writeTemp(dfd, name, f, id)
	if err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s is a directory", f.Path)
		}
		return &fs.PathError{Op: "rename", Path: f.Path, Err: err}
	}
	return d.Sync()
}

// writeTemp creates and fills the temporary file beside name and returns its name.
func writeTemp(dfd int, name string, f FileData, id *spec.Identity) (string, error) {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	var tmp string
	var fd int
	for range 10 { // O_EXCL: a name someone else took is not ours; take another
		tmp = "." + name + ".tend-file-" + randomSuffix()
		var err error
		if fd, err = unix.Openat(dfd, tmp, flags, 0o600); err == nil {
			break
		} else if !errors.Is(err, unix.EEXIST) {
			return "", &fs.PathError{Op: "create", Path: filepath.Join(filepath.Dir(f.Path), tmp), Err: err}
		}
		fd = -1
	}
	if fd < 0 {
		return "", fmt.Errorf("cannot create a temporary file beside %s", f.Path)
	}
	file := os.NewFile(uintptr(fd), tmp)
	_, err := file.Write(f.Data)
	if err == nil && id != nil && id.HasUser {
		err = file.Chown(int(id.UID), int(id.GID))
	}
	if err == nil {
		err = file.Chmod(f.Mode) // after chown, which may clear setuid-like bits; never affected by umask
	}
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return "", fmt.Errorf("write %s: %w", f.Path, err)
	}
	return tmp, nil
}
