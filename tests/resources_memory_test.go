package tests

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// longPathsTgz writes a .tgz of n directories, each path pathLen bytes long (the
// issue's 250,000 directories of 3,774 bytes make 9.7 MB). Entries differ only in
// the last digits of their long names, so each is a template with the digits
// patched in (archive/tar under the race detector takes minutes for this); gzip
// is the system's, for the same reason.
func longPathsTgz(t *testing.T, path string, n, pathLen int) {
	t.Helper()
	gz, err := exec.LookPath("gzip")
	if err != nil {
		t.Skip("no gzip command")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(gz, "-1")
	cmd.Stdout = f
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// An entry is a GNU long name header, the name, and the directory's header
	// (whose own name field holds the first 100 bytes, the same for all).
	name := []byte(strings.Repeat(strings.Repeat("d", 250)+"/", pathLen/251) + strings.Repeat("e", pathLen%251))
	name = append(name[:pathLen-10], "/00000000/"...)
	digits := name[pathLen-9 : pathLen-1]
	var entry bytes.Buffer
	tw := tar.NewWriter(&entry)
	if err := tw.WriteHeader(&tar.Header{Name: string(name), Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatGNU}); err != nil {
		t.Fatal(err)
	}
	tw.Flush()
	tmpl := entry.Bytes()
	at := bytes.Index(tmpl, name) + pathLen - 9
	w := bufio.NewWriterSize(in, 1<<20)
	for range n {
		copy(tmpl[at:], digits)
		w.Write(tmpl)
		increment(digits)
	}
	w.Write(make([]byte, 1024)) // the end of the archive
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// increment adds one to a decimal number written in ASCII digits.
func increment(digits []byte) {
	for i := len(digits) - 1; i >= 0; i-- {
		if digits[i] < '9' {
			digits[i]++
			return
		}
		digits[i] = '0'
	}
}

// emptyEntriesZip writes a zip of n empty stored entries, with the zip64 end
// records their count needs.
func emptyEntriesZip(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	le := binary.LittleEndian
	const nameLen = 7
	local := make([]byte, 30+nameLen)
	le.PutUint32(local, 0x04034b50)
	le.PutUint16(local[4:], 20)
	le.PutUint16(local[26:], nameLen)
	central := make([]byte, 46+nameLen)
	le.PutUint32(central, 0x02014b50)
	le.PutUint16(central[4:], 3<<8|20) // made on unix
	le.PutUint16(central[6:], 20)
	le.PutUint16(central[28:], nameLen)
	le.PutUint32(central[38:], 0o100644<<16)
	digits := []byte("0000000")
	for range n { // local headers: no data follows
		copy(local[30:], digits)
		w.Write(local)
		increment(digits)
	}
	cdStart := int64(n) * int64(len(local))
	digits = []byte("0000000")
	for i := range n {
		le.PutUint32(central[42:], uint32(i*len(local)))
		copy(central[46:], digits)
		w.Write(central)
		increment(digits)
	}
	cdSize := int64(n) * int64(len(central))
	end64 := make([]byte, 56)
	le.PutUint32(end64, 0x06064b50)
	le.PutUint64(end64[4:], 44)
	le.PutUint16(end64[12:], 45)
	le.PutUint16(end64[14:], 45)
	le.PutUint64(end64[24:], uint64(n))
	le.PutUint64(end64[32:], uint64(n))
	le.PutUint64(end64[40:], uint64(cdSize))
	le.PutUint64(end64[48:], uint64(cdStart))
	w.Write(end64)
	loc := make([]byte, 20)
	le.PutUint32(loc, 0x07064b50)
	le.PutUint64(loc[8:], uint64(cdStart+cdSize))
	le.PutUint32(loc[16:], 1)
	w.Write(loc)
	end := make([]byte, 22)
	le.PutUint32(end, 0x06054b50)
	le.PutUint16(end[8:], 0xffff)
	le.PutUint16(end[10:], 0xffff)
	le.PutUint32(end[12:], 0xffffffff)
	le.PutUint32(end[16:], 0xffffffff)
	w.Write(end)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

var (
	plainOnce sync.Once
	plainBin  string
	plainErr  error
)

// plainTend builds tend without the race detector, whose shadow memory would
// swamp what a memory test measures.
func plainTend(t *testing.T) string {
	t.Helper()
	plainOnce.Do(func() {
		plainBin = filepath.Join(filepath.Dir(tendBin), "tend-plain")
		out, err := exec.Command("go", "build", "-o", plainBin, "..").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("build tend: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBin
}

// peakRSS is the high-water mark of pid's resident memory, in bytes.
func peakRSS(t *testing.T, pid int) int64 { return procMemory(t, pid, "VmHWM") }

// procMemory is the field key (VmRSS, VmHWM) of /proc/PID/status, in bytes.
func procMemory(t *testing.T, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", key, line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// Extracting an archive of many long paths, or a zip of millions of entries,
// takes bounded memory: both are rejected with the peak RSS of tend (the real
// binary) less than 64 MiB above what it was before.
func TestResourceExtractionMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 200 MB of archives")
	}
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	data := t.TempDir()
	started := time.Now()
	tgz, zip := filepath.Join(data, "paths.tgz"), filepath.Join(data, "entries.zip")
	// 25,000 names of 3774 bytes: 94 MB, past the 64 MiB bound of names.
	longPathsTgz(t, tgz, 25_000, 3774)
	emptyEntriesZip(t, zip, 2_000_000)
	t.Logf("archives made in %v", time.Since(started))
	good := filepath.Join(data, "good.tgz")
	longPathsTgz(t, good, 3, 300)
	if testing.Verbose() {
		fi, _ := os.Stat(tgz)
		t.Logf("%s: %d bytes", tgz, fi.Size())
	}

	spec := func(rev int, archive string) string {
		return fmt.Sprintf(`
dynamic_resources:
  - {name: geo, revision: %d, urls: ["file://%s"], storage_dir: store, destination: geo, extract: true}
containers:
  - name: app
    command: ["sleep", "60"]
`, rev, archive)
	}
	tp := start(t, spec(1, good), runOpts{bin: plainTend(t)})
	tp.waitStatus(15*time.Second, "geo ready", func(d status.Document) bool {
		return dynamicStatus(d, "geo").State == "ready" && containerStatus(d, "app").State == status.Running
	})
	pid := tp.pid()
	before := peakRSS(t, pid)
	for rev, c := range []struct{ archive, reason string }{
		{tgz, "bytes of entry names (archive bomb?)"},
		{zip, "more than 1000000 entries (archive bomb?)"},
	} {
		writeSpec(t, tp, spec(rev+2, c.archive))
		post(t, tp, "/v1/reload")
		// Wait for the rejection, or for the memory to pass the bound.
		var g status.DynamicResource
		var peak int64
		waitFor(t, 2*time.Minute, "revision rejected", func() (bool, string) {
			peak = peakRSS(t, pid)
			doc, _ := tp.status()
			g = dynamicStatus(doc, "geo")
			return peak-before >= 64<<20 || (g.Revision == int64(rev+2) && g.State == "failed"), fmt.Sprintf("%+v", g)
		})
		t.Logf("%s: peak RSS %d MiB, %d MiB before", filepath.Base(c.archive), peak>>20, before>>20)
		if peak-before >= 64<<20 {
			t.Fatalf("%s: peak RSS grew by %d MiB, want less than 64", filepath.Base(c.archive), (peak-before)>>20)
		}
		if g.ActiveRevision != 1 || !strings.Contains(g.Reason, c.reason) {
			t.Errorf("%s: geo = %+v, want failed with %q", filepath.Base(c.archive), g, c.reason)
		}
	}
	termAndWait(t, tp, 10*time.Second)
}
