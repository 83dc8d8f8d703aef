package resources

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
)

// Checksum is a parsed spec checksum: "EMPTY:" (nothing to verify), "MD5:<hex>" or
// "SHA256:<hex>".
type Checksum struct {
	Algo string // "EMPTY", "MD5" or "SHA256"
	Hex  string // lower-case digest; empty for EMPTY
}

// ParseChecksum parses a checksum as the spec writes it.
func ParseChecksum(s string) (Checksum, error) {
	algo, digest, ok := strings.Cut(s, ":")
	if !ok {
		return Checksum{}, fmt.Errorf("checksum %q: want EMPTY:, MD5:<hex> or SHA256:<hex>", s)
	}
	c := Checksum{Algo: strings.ToUpper(algo), Hex: strings.ToLower(digest)}
	want := 0
	switch c.Algo {
	case "EMPTY":
		if c.Hex != "" {
			return Checksum{}, fmt.Errorf("checksum %q: EMPTY: takes no digest", s)
		}
		return c, nil
	case "MD5":
		want = md5.Size
	case "SHA256":
		want = sha256.Size
	default:
		return Checksum{}, fmt.Errorf("checksum %q: unknown algorithm %q", s, algo)
	}
	if b, err := hex.DecodeString(c.Hex); err != nil || len(b) != want {
		return Checksum{}, fmt.Errorf("checksum %q: want %d hex digits", s, 2*want)
	}
	return c, nil
}

// String is the checksum as the spec writes it.
func (c Checksum) String() string { return c.Algo + ":" + c.Hex }

// Empty reports whether there is nothing to verify.
func (c Checksum) Empty() bool { return c.Algo == "EMPTY" }

// newHash returns the hash to compute on the way, or nil for EMPTY.
func (c Checksum) newHash() hash.Hash {
	switch c.Algo {
	case "MD5":
		return md5.New()
	case "SHA256":
		return sha256.New()
	}
	return nil
}

// check compares a finished hash with the checksum; nil h (EMPTY) always matches.
func (c Checksum) check(h hash.Hash) error {
	if h == nil {
		return nil
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != c.Hex {
		return &MismatchError{Want: c.String(), Got: c.Algo + ":" + got}
	}
	return nil
}

// MismatchError is a checksum that did not match.
type MismatchError struct{ Want, Got string }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("checksum mismatch: want %s, got %s", e.Want, e.Got)
}

// VerifyFile re-hashes the file at path against c (a regular file; EMPTY only checks
// that it is one).
func VerifyFile(path string, c Checksum) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	h := c.newHash()
	if h == nil {
		return nil
	}
	if _, err := io.CopyBuffer(h, f, make([]byte, copyBuffer)); err != nil {
		return err
	}
	return c.check(h)
}

// FileDigest is the SHA-256 of the regular file at path, written as a checksum
// ("SHA256:<hex>"): what tend records of a download whose spec checksum may say
// nothing (EMPTY:), to know later whether the file is still what was downloaded.
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, copyBuffer)); err != nil {
		return "", err
	}
	return "SHA256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// digestOf is the digest FileDigest would give a file that was verified against c
// on download: the checksum itself when it is a SHA-256, else "" (to be computed).
func digestOf(c Checksum) string {
	if c.Algo == "SHA256" {
		return c.String()
	}
	return ""
}
