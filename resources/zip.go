package resources

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
)

// A zip is read one central directory record at a time, not with archive/zip's
// Reader, which holds a record for every entry before the first one can be read
// (hundreds of bytes each: a zip of two million empty entries took 848 MB).

const (
	zipLocalSig  = 0x04034b50
	zipCentral   = 0x02014b50
	zipEndSig    = 0x06054b50
	zip64EndSig  = 0x06064b50
	zip64LocSig  = 0x07064b50
	zipEndLen    = 22
	zip64LocLen  = 20
	zip64EndLen  = 56
	zipHeaderLen = 46
	zipLocalLen  = 30
)

// zipDir is where a zip's central directory is: base is the offset of the archive
// within the file (data prepended to a zip moves every offset).
type zipDir struct {
	base, offset, size int64
	entries            uint64
}

// zipEntry is one central directory record.
type zipEntry struct {
	name        string
	mode        fs.FileMode
	flags       uint16
	method      uint16
	crc         uint32
	compressed  uint64
	size        uint64
	localHeader int64 // offset of the local header in the file
}

// findZipDir reads the end of central directory record (and its zip64 form).
func findZipDir(r io.ReaderAt, size int64) (zipDir, error) {
	n := min(size, zipEndLen+0xffff) // the record and the longest comment
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return zipDir{}, err
	}
	p := -1
	for i := len(buf) - zipEndLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == zipEndSig {
			p = i
			break
		}
	}
	if p < 0 {
		return zipDir{}, errors.New("zip: no end of central directory")
	}
	end := buf[p:]
	le := binary.LittleEndian
	d := zipDir{entries: uint64(le.Uint16(end[10:])), size: int64(le.Uint32(end[12:])), offset: int64(le.Uint32(end[16:]))}
	endAt := size - n + int64(p)
	if d.entries == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff {
		if at, ok := findZip64End(r, endAt); ok {
			b := make([]byte, zip64EndLen)
			if _, err := r.ReadAt(b, at); err != nil || le.Uint32(b) != zip64EndSig {
				return zipDir{}, errors.New("zip: bad zip64 end of central directory")
			}
			d.entries, d.size, d.offset = le.Uint64(b[32:]), int64(le.Uint64(b[40:])), int64(le.Uint64(b[48:]))
			endAt = at
		}
	}
	d.base = endAt - d.size - d.offset
	if d.size < 0 || d.offset < 0 || d.base < 0 || d.base+d.offset > size {
		return zipDir{}, errors.New("zip: central directory out of bounds")
	}
	return d, nil
}

// findZip64End returns the offset of the zip64 end record the locator before the
// end record at endAt names.
func findZip64End(r io.ReaderAt, endAt int64) (int64, bool) {
	if endAt < zip64LocLen {
		return 0, false
	}
	b := make([]byte, zip64LocLen)
	if _, err := r.ReadAt(b, endAt-zip64LocLen); err != nil || binary.LittleEndian.Uint32(b) != zip64LocSig {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[8:])), true
}

// zipEntries calls each for every record of the central directory, in order.
func zipEntries(r io.ReaderAt, d zipDir, each func(*zipEntry) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, d.base+d.offset, d.size), 64<<10)
	le := binary.LittleEndian
	h := make([]byte, zipHeaderLen)
	for {
		if _, err := io.ReadFull(br, h); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("zip: central directory: %w", err)
		}
		if le.Uint32(h) != zipCentral {
			return errors.New("zip: bad central directory record")
		}
		nameLen, extraLen, commentLen := int(le.Uint16(h[28:])), int(le.Uint16(h[30:])), int(le.Uint16(h[32:]))
		rest := make([]byte, nameLen+extraLen)
		if _, err := io.ReadFull(br, rest); err != nil {
			return fmt.Errorf("zip: central directory: %w", err)
		}
		if _, err := br.Discard(commentLen); err != nil {
			return fmt.Errorf("zip: central directory: %w", err)
		}
		e := &zipEntry{
			name:        string(rest[:nameLen]),
			flags:       le.Uint16(h[8:]),
			method:      le.Uint16(h[10:]),
			crc:         le.Uint32(h[16:]),
			compressed:  uint64(le.Uint32(h[20:])),
			size:        uint64(le.Uint32(h[24:])),
			localHeader: int64(le.Uint32(h[42:])),
		}
		// archive/zip knows how each system records permissions.
		fh := zip.FileHeader{Name: e.name, CreatorVersion: le.Uint16(h[4:]), ExternalAttrs: le.Uint32(h[38:])}
		e.mode = fh.Mode()
		zip64Sizes(e, rest[nameLen:])
		e.localHeader += d.base
		if err := each(e); err != nil {
			return err
		}
	}
}

// zip64Sizes takes the sizes and offset that did not fit in 32 bits from the zip64
// extra field, which holds them in this order, each only when its field is full.
func zip64Sizes(e *zipEntry, extra []byte) {
	le := binary.LittleEndian
	for len(extra) >= 4 {
		tag, n := le.Uint16(extra), int(le.Uint16(extra[2:]))
		extra = extra[4:]
		if n > len(extra) {
			return
		}
		field := extra[:n]
		extra = extra[n:]
		if tag != 0x0001 {
			continue
		}
		next := func(v *uint64) {
			if *v == 0xffffffff && len(field) >= 8 {
				*v, field = le.Uint64(field), field[8:]
			}
		}
		next(&e.size)
		next(&e.compressed)
		off := uint64(e.localHeader)
		next(&off)
		e.localHeader = int64(off)
	}
}

// zipReader opens entries' data; it keeps one decompressor for all of them.
type zipReader struct {
	r       io.ReaderAt
	inflate io.ReadCloser
}

// open returns e's data, checked against its size and CRC-32 as it is read.
func (z *zipReader) open(e *zipEntry) (io.Reader, error) {
	if e.flags&0x1 != 0 {
		return nil, fmt.Errorf("zip: entry %q is encrypted", e.name)
	}
	h := make([]byte, zipLocalLen)
	if _, err := z.r.ReadAt(h, e.localHeader); err != nil {
		return nil, fmt.Errorf("zip: entry %q: %w", e.name, err)
	}
	le := binary.LittleEndian
	if le.Uint32(h) != zipLocalSig {
		return nil, fmt.Errorf("zip: entry %q: bad local header", e.name)
	}
	at := e.localHeader + zipLocalLen + int64(le.Uint16(h[26:])) + int64(le.Uint16(h[28:]))
	data := io.NewSectionReader(z.r, at, int64(e.compressed))
	var r io.Reader
	switch e.method {
	case zip.Store:
		r = data
	case zip.Deflate:
		if z.inflate == nil {
			z.inflate = flate.NewReader(data)
		} else if err := z.inflate.(flate.Resetter).Reset(data, nil); err != nil {
			return nil, err
		}
		r = z.inflate
	default:
		return nil, fmt.Errorf("zip: entry %q: unsupported compression method %d", e.name, e.method)
	}
	return &zipData{r: r, e: e, crc: crc32.NewIEEE()}, nil
}

// zipData fails a read that gives more or fewer bytes than the record says, or
// bytes with another CRC-32.
type zipData struct {
	r   io.Reader
	e   *zipEntry
	crc hash.Hash32
	n   uint64
}

func (z *zipData) Read(b []byte) (int, error) {
	n, err := z.r.Read(b)
	z.crc.Write(b[:n])
	z.n += uint64(n)
	if z.n > z.e.size {
		return n, fmt.Errorf("zip: entry %q is longer than its record says", z.e.name)
	}
	if err == io.EOF && (z.n != z.e.size || z.crc.Sum32() != z.e.crc) {
		return n, fmt.Errorf("zip: entry %q: %w", z.e.name, zip.ErrChecksum)
	}
	return n, err
}

// isZip tells a zip by its first bytes (a local header, or the end record of an
// empty archive).
func isZip(head []byte) bool {
	return bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06"))
}
