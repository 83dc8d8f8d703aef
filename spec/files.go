package spec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultFileMode is the mode of a file of files: without one.
const DefaultFileMode = "0644"

// File is a file tend writes into the instance before the init containers, at every
// prepare (docs/reference.md "Files"). Exactly one of Content and
// FromFile is set.
type File struct {
	// Path is relative to instance.dir (and stays inside it), or absolute.
	Path string `yaml:"path" json:"path"`
	// Content is written as is after {VAR} substitution. An Opt, so that an empty
	// file (content: "") differs from an absent field.
	Content Opt[string] `yaml:"content,omitempty" json:"content,omitzero"`
	// FromFile is copied byte for byte: a secret, read when the file is written and
	// never rendered or logged (only its path is).
	FromFile string `yaml:"from_file,omitempty" json:"from_file,omitempty"`
	// Mode is an octal string such as "0640".
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
}

// Perm is the file's mode; valid after Load.
func (f File) Perm() os.FileMode {
	m, _ := parseFileMode(f.Mode)
	return m
}

// parseFileMode reads an octal mode of at most 0777: setuid, setgid and sticky bits
// have no use on a configuration file and are refused rather than dropped.
func parseFileMode(s string) (os.FileMode, bool) {
	if s == "" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, false
	}
	return os.FileMode(n), true
}

// FilePath is the absolute path a file of files: is written to.
func (s *Spec) FilePath(f File) string { return s.WorkDir(f.Path) }

// FromFilePath is the absolute path of a file's from_file.
func (s *Spec) FromFilePath(f File) string { return s.WorkDir(f.FromFile) }

// files checks the files: section: a path inside instance.dir (or absolute) that no
// resource or other file has, exactly one source, a valid mode; content is
// substituted.
func (k *checker) files(targets map[string]string) {
	for i := range k.s.Files {
		f := &k.s.Files[i]
		path := index("files", i)
		if k.filePath(join(path, "path"), f.Path) {
			k.target(targets, join(path, "path"), f.Path)
		}
		switch {
		case f.Content.IsSet() && f.FromFile != "":
			k.c.addf(path, "has both content and from_file; use one")
		case !f.Content.IsSet() && strings.TrimSpace(f.FromFile) == "":
			k.c.addf(path, "needs content or from_file")
		case f.Content.IsSet():
			text := f.Content.Get()
			if k.subst(join(path, "content"), &text) {
				f.Content = Some(text)
			}
		}
		if _, ok := parseFileMode(f.Mode); !ok {
			k.c.addf(join(path, "mode"), "must be an octal mode of at most 0777 such as \"0640\", got %q", f.Mode)
		}
	}
}

// filePath checks a files: path: set, naming a file, and when relative inside
// instance.dir once cleaned (conf/../../etc/passwd is refused).
func (k *checker) filePath(path, p string) bool {
	clean := filepath.Clean(p)
	switch {
	case strings.TrimSpace(p) == "":
		k.c.addf(path, "must be set")
	case strings.HasSuffix(p, "/") || clean == "." || clean == "/":
		k.c.addf(path, "must name a file, got %q", p)
	case !filepath.IsAbs(p) && (clean == ".." || strings.HasPrefix(clean, "../")):
		k.c.addf(path, "%q is outside instance.dir; use an absolute path to write elsewhere", p)
	default:
		return true
	}
	return false
}
