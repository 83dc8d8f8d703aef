package spec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
)

// Revision is the spec's revision id (docs/reference.md "Updates and rollback"):
// instance.revision, or 12 hex digits of a digest of the spec's bytes, the --var
// values and a keyed digest of the files it reads (env_files, value_from,
// from_file), so that a change of any of them is a new revision while the id
// reveals nothing of a secret. "" for a spec not loaded from a file.
func (s *Spec) Revision() string {
	if s.Instance.Revision != "" {
		return s.Instance.Revision
	}
	if s.digest == [32]byte{} {
		return ""
	}
	if s.inputs == [32]byte{} {
		return revisionOf(s.digest) // reads nothing else: the file's own digest
	}
	h := sha256.New()
	h.Write(s.digest[:])
	h.Write(s.inputs[:])
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// inputsDigest digests what besides its bytes makes a spec what it is: the --var
// values, and (keyed with opts.RevisionKey) the content of the files it reads. A
// file that cannot be read counts as its error: validation reports it anyway. It is
// zero for a spec that has neither.
func inputsDigest(s *Spec, opts Options) [32]byte {
	if len(opts.Vars) == 0 && !readsFiles(s) {
		return [32]byte{}
	}
	h := sha256.New()
	names := sortedKeys(opts.Vars)
	for _, n := range names {
		writeField(h, "var", n)
		writeField(h, "", opts.Vars[n])
	}
	var key []byte
	if opts.RevisionKey != nil {
		key = opts.RevisionKey(s.Instance.Dir)
	}
	if key == nil {
		key = []byte("tend revision")
	}
	mac := hmac.New(sha256.New, key)
	read := func(kind, name string) {
		writeField(mac, kind, name)
		f, _, err := openRegular(s.Instance.Dir, s.WorkDir(name), "a file")
		if err != nil {
			writeField(mac, "error", err.Error())
			return
		}
		defer f.Close()
		if _, err := io.Copy(mac, io.LimitReader(f, 1<<30)); err != nil {
			writeField(mac, "error", err.Error())
		}
	}
	for _, f := range s.EnvFiles {
		read("env_file", f)
	}
	secrets := func(vars []EnvVar) {
		for _, v := range vars {
			if v.ValueFrom != nil {
				read("value_from", v.ValueFrom.File)
			}
		}
	}
	secrets(s.Env)
	for _, ic := range s.InitContainers {
		secrets(ic.Env)
	}
	for _, c := range s.Containers {
		secrets(c.Env)
	}
	for _, f := range s.Files {
		if f.FromFile != "" {
			read("from_file", f.FromFile)
		}
	}
	h.Write(mac.Sum(nil))
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// writeField writes a length-prefixed field, so that no two lists digest alike.
func writeField(w io.Writer, kind, value string) {
	for _, part := range []string{kind, value} {
		n := len(part)
		w.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		io.WriteString(w, part)
	}
}

// readsFiles reports whether the spec reads env_files, value_from or from_file.
func readsFiles(s *Spec) bool {
	if len(s.EnvFiles) > 0 {
		return true
	}
	secret := func(vars []EnvVar) bool {
		for _, v := range vars {
			if v.ValueFrom != nil {
				return true
			}
		}
		return false
	}
	if secret(s.Env) {
		return true
	}
	for _, ic := range s.InitContainers {
		if secret(ic.Env) {
			return true
		}
	}
	for _, c := range s.Containers {
		if secret(c.Env) {
			return true
		}
	}
	for _, f := range s.Files {
		if f.FromFile != "" {
			return true
		}
	}
	return false
}

// ContentDigest names everything the spec was made from (its bytes, the --var
// values, the files it reads): two specs with one id and different content differ
// here.
func (s *Spec) ContentDigest() string {
	h := sha256.New()
	h.Write(s.digest[:])
	h.Write(s.inputs[:])
	return hex.EncodeToString(h.Sum(nil))
}
