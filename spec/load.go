package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/tend-sh/tend/internal/beneath"
)

// MaxFileSize bounds a spec file; a bigger one is rejected before it is read. A real
// spec is a few KiB; a hostile one costs up to ~100 bytes of parse tree per input byte.
const MaxFileSize = 1 << 20

// Options are the inputs of Load besides the file itself.
type Options struct {
	Vars     map[string]string // --var NAME=VALUE, added to the substitution variables
	Environ  []string          // tend's own environment (os.Environ()), the base of every process's env
	Hostname string            // BSCONFIG_IHOST and the default instance.name
	Limits   map[string]string // CPU_LIMIT, CPU_GUARANTEE, MEM_LIMIT, MEM_GUARANTEE where set (cgroup)
	// RevisionKey returns the key of the keyed digest of the files a spec reads
	// (revisionid.go), given instance.dir; nil: a fixed key.
	RevisionKey func(instanceDir string) []byte
}

// Load reads, decodes (strictly), defaults, validates and substitutes the spec at path,
// reads its env_files and value_from secrets, and returns the resolved spec. The error
// is either a one-line error naming the file or *Errors listing every field error.
func Load(path string, opts Options) (*Spec, error) {
	data, err := readSpecFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return loadData(data, path, filepath.Dir(abs), opts)
}

// ReadFile reads a spec file as Load does, refusing what cannot be a spec (see
// readSpecFile and checkText); the error names the file. The convert package reads
// through it before it tells the format.
func ReadFile(path string) ([]byte, error) {
	data, err := readSpecFile(path)
	if err == nil {
		err = checkText(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// LoadDocument is Load for a file already read by ReadFile: doc is the tend spec to
// load (file itself, or what another format was converted into), file the file's
// bytes (they name the Revision). Errors name path.
func LoadDocument(path string, file, doc []byte, opts Options) (*Spec, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := loadData(doc, path, filepath.Dir(abs), opts)
	if err != nil {
		return nil, err
	}
	s.digest = sha256.Sum256(file)
	return s, nil
}

// loadData is Load after reading: data is the file's content, specDir its absolute
// directory.
func loadData(data []byte, path, specDir string, opts Options) (*Spec, error) {
	if err := checkText(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := newCollector()
	s, err := decode(data, c)
	var syntax *FieldError
	if errors.As(err, &syntax) {
		// A syntax error has a line: "FILE:LINE: message", as every field error.
		return nil, &Errors{File: path, Fields: []*FieldError{syntax}}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.path = path
	s.digest = sha256.Sum256(data)
	resolve(s, opts, specDir, c)
	if err := c.result(path); err != nil {
		return nil, err
	}
	return s, nil
}

// resolve runs every step after decoding: defaults, validation with substitution,
// env files and secrets, and the base environment.
func resolve(s *Spec, opts Options, specDir string, c *collector) {
	applyDefaults(s, opts.Hostname, specDir)
	vars := newVariables(s, opts.Hostname, opts.Vars, c)
	(&checker{c: c, vars: vars, s: s}).check()
	checkExecutable(s, c)
	s.vars = vars.all()

	e := newEnvList()
	e.setEnviron(opts.Environ)
	for _, name := range sortedKeys(s.vars) {
		e.set(name, s.vars[name])
	}
	for _, name := range sortedKeys(opts.Limits) {
		e.set(name, opts.Limits[name])
	}
	for name, v := range limitVars(s.Instance.Limits) {
		e.set(name, v) // the instance's limits, where it has them, over tend's cgroup's
	}
	identityBefore := identityEnv(e)
	budget := MaxExpanded
	for i, f := range s.EnvFiles {
		if f == "" {
			continue // reported by the checker
		}
		if err := readEnvFile(s.Instance.Dir, s.WorkDir(f), e, &budget); err != nil {
			c.addf(index("env_files", i), "%v", err)
		}
	}
	readSecrets(s, "env", s.Env, c)
	e.setVars(s.Env)
	s.baseEnv, s.baseAt = e.strings(), e.index()
	s.specEnv = specEnvKeys(e, identityBefore)
	resolveIdentities(s, c)

	for i := range s.InitContainers {
		readSecrets(s, join(index("init_containers", i), "env"), s.InitContainers[i].Env, c)
	}
	for i := range s.Containers {
		readSecrets(s, join(index("containers", i), "env"), s.Containers[i].Env, c)
	}
	s.inputs = inputsDigest(s, opts)
}

// readSecrets reads the value_from files of an env list into their secret fields.
func readSecrets(s *Spec, path string, vars []EnvVar, c *collector) {
	for i := range vars {
		v := &vars[i]
		if v.ValueFrom == nil || v.ValueFrom.File == "" {
			continue
		}
		secret, err := readSecret(s.Instance.Dir, s.WorkDir(v.ValueFrom.File))
		if err != nil {
			c.addf(join(index(path, i), "value_from.file"), "cannot read the secret: %v", err)
			continue
		}
		v.secret = secret
	}
}

// readSpecFile reads a spec file, refusing what cannot be one: a directory or other
// non-regular file, anything over MaxFileSize (without reading it), an empty file,
// binary data and text that is not UTF-8.
func readSpecFile(path string) ([]byte, error) {
	f, size, err := openRegular("", path, "a spec file")
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if size > MaxFileSize {
		return nil, fmt.Errorf("too large for a spec (%d bytes, at most %d)", size, MaxFileSize)
	}
	// The file may grow while it is read: read at most one byte too many.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	switch {
	case err != nil:
		return nil, unwrapPath(err)
	case len(data) > MaxFileSize:
		return nil, fmt.Errorf("too large for a spec (more than %d bytes)", MaxFileSize)
	}
	return data, nil
}

// openRegular opens path for reading if it is a regular file, and returns its size;
// what names the file expected in the error for a directory. Errors of the system
// calls are *os.PathError (they name the file), the others do not.
// It opens with O_NONBLOCK, so that a FIFO with no writer does not block the open
// (nor a later read) forever, and judges the opened descriptor (fstat), so that a
// FIFO or device swapped in after a check is refused too. Go adds O_CLOEXEC itself.
// A path beneath root (instance.dir; "" for none) is resolved beneath it: a
// symlink there that leads out is an error naming the path (internal/beneath).
func openRegular(root, path, what string) (*os.File, int64, error) {
	f, err := beneath.OpenFile(root, path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case st.IsDir():
		err = fmt.Errorf("is a directory, not %s", what)
	case !st.Mode().IsRegular():
		err = fmt.Errorf("not a regular file (%s)", fileKind(st.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// fileKind names the type of a file that is not regular nor a directory.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return m.Type().String()
}

// checkText refuses content that cannot be a spec: empty, binary or not UTF-8.
func checkText(data []byte) error {
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return errors.New("the file is empty")
	case bytes.IndexByte(data, 0) >= 0:
		return errors.New("binary data (a NUL byte), not a YAML or JSON spec")
	case !utf8.Valid(data):
		return errors.New("not UTF-8 text, not a YAML or JSON spec")
	}
	return nil
}

// unwrapPath drops the path from *fs.PathError: the caller names the file.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// Path is the spec file, as given to Load.
func (s *Spec) Path() string { return s.path }

// FileDigest names the bytes Load read (12 hex digits, as FileRevision does); ""
// for a spec not loaded from a file.
func (s *Spec) FileDigest() string {
	if s.digest == [32]byte{} {
		return ""
	}
	return revisionOf(s.digest)
}

// FileRevision is the FileDigest that loading path now would give, without parsing it:
// a watcher tells a change of content from a touch with it.
func FileRevision(path string) (string, error) {
	data, err := readSpecFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return revisionOf(sha256.Sum256(data)), nil
}

func revisionOf(digest [32]byte) string { return hex.EncodeToString(digest[:6]) }

// Vars is every substitution variable: BSCONFIG_INAME, BSCONFIG_IDIR, BSCONFIG_IHOST,
// BSCONFIG_IPORT (when instance.port is set) and the BSCONFIG_IPORT_PLUS_N the spec
// uses, instance.vars and --var. They are also in every process's environment.
func (s *Spec) Vars() map[string]string { return maps.Clone(s.vars) }
