package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rss is pid's resident memory now, in bytes.
func rss(t *testing.T, pid int) int64 { return procMemory(t, pid, "VmRSS") }

// TestLogsMemoryBound: 100 containers that each write 2000 lines of 100 bytes (the
// rings of 1000 lines wrap) cost tend a bounded amount of memory, about their kept
// lines; bench/README.md quotes the figures this logs.
func TestLogsMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const containers = 100
	measure := func(keep int) (rssBytes, peak int64, tp *tend) {
		var b strings.Builder
		b.WriteString("containers:\n")
		for i := range containers {
			fmt.Fprintf(&b, `  - name: c%03d
    log: {keep_lines: %d}
    command: ["sh", "-c", "seq -f '%%099g' 1 2000; touch {DIR}/done-%d; exec sleep 600"]
`, i, keep, i)
		}
		tp = start(t, b.String(), runOpts{discard: true, bin: plainTend(t)})
		for i := range containers {
			waitFile(t, 60*time.Second, filepath.Join(tp.dir, fmt.Sprintf("done-%d", i)))
		}
		pid := tp.pid()
		return rss(t, pid), peakRSS(t, pid), tp
	}
	baseRSS, basePeak, _ := measure(0)
	keptRSS, keptPeak, tp := measure(1000)
	t.Logf("tend with %d containers x 2000 lines of 100 bytes: keep_lines 0: RSS %.1f MiB (peak %.1f); keep_lines 1000: RSS %.1f MiB (peak %.1f)",
		containers, mib(baseRSS), mib(basePeak), mib(keptRSS), mib(keptPeak))
	// 100 x 1000 lines x (100 bytes in a 112-byte allocation + a 40-byte slot) is
	// 14.5 MiB; the Go heap may hold up to as much again before it collects.
	if extra := keptRSS - baseRSS; extra > 40<<20 {
		t.Errorf("keeping 1000 lines per container cost %.1f MiB, want under 40", mib(extra))
	}
	out, _, code := runCLI(t, tp.dir, "logs", "--listen", "unix:"+tp.sock, "-n", "5000", "c042")
	if n := strings.Count(out, "\n"); code != 0 || n != 1000 || !strings.HasSuffix(out, strings.Repeat("0", 95)+"2000\n") {
		t.Errorf("c042 kept %d lines (exit %d), want the last 1000", n, code)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
