package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// curveColumn is one figure of the curve's table and chart data.
type curveColumn struct {
	title, mode, key string
	scale            float64
	format           string
}

var curveColumns = []curveColumn{
	{"launch → last exec, ms", "sleep", "exec_ms", 1, "%.1f"},
	{"anon, MiB", "sleep", "anon_kib", 1.0 / 1024, "%.1f"},
	{"RSS, MiB", "sleep", "rss_kib", 1.0 / 1024, "%.1f"},
	{"PSS, MiB", "sleep", "pss_kib", 1.0 / 1024, "%.1f"},
	{"cgroup charge (tend and its containers' kernel memory), MiB", "sleep", "cg_own_kib", 1.0 / 1024, "%.1f"},
	{"CPU idle, % of a core", "sleep", "cpu_pct", 1, "%.2f"},
	{"`/v1/status`, ms", "sleep", "status_ms", 1, "%.2f"},
	{"`/metrics`, ms", "sleep", "metrics_ms", 1, "%.2f"},
	{"SIGTERM → exit, ms", "sleep", "stop_ms", 1, "%.1f"},
	{"CPU with `tend top`, %", "sleep", "viewer_cpu_pct", 1, "%.2f"},
	{"anon with checks, MiB", "checks", "anon_kib", 1.0 / 1024, "%.1f"},
	{"CPU with checks, %", "checks", "cpu_pct", 1, "%.2f"},
	{"p99 check lateness, % of the period", "checks", "late_p99_pct", 1, "%.1f"},
	{"SIGTERM → exit with checks, ms", "checks", "stop_ms", 1, "%.1f"},
}

// cmdCurveReport turns the curve's records into a Markdown table (-md) and a
// whitespace-separated data file for gnuplot (-dat: one line per N, the columns of
// curveColumns in order after N, NaN where there is no figure). With several records
// for one N and mode, each figure is their median.
func cmdCurveReport(args []string) error {
	fs := flag.NewFlagSet("curve-report", flag.ContinueOnError)
	in := fs.String("in", "", "the curve's records (JSON lines)")
	md := fs.String("md", "", "write the Markdown table here (default stdout)")
	dat := fs.String("dat", "", "write gnuplot's data here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	vals := map[string][]float64{} // n|mode|key
	var errs []string
	ns := map[int]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) != nil || r["scenario"] != "curve" {
			continue
		}
		n, _ := r["n"].(float64)
		mode, _ := r["mode"].(string)
		ns[int(n)] = true
		if e, ok := r["error"].(string); ok {
			errs = append(errs, fmt.Sprintf("- %d containers, %s: %s", int(n), mode, e))
		}
		if lo, _ := r["leftover"].(float64); lo > 0 {
			errs = append(errs, fmt.Sprintf("- %d containers, %s: %d processes left running after tend exited", int(n), mode, int(lo)))
		}
		for k, v := range r {
			if x, ok := v.(float64); ok {
				key := fmt.Sprintf("%d|%s|%s", int(n), mode, k)
				vals[key] = append(vals[key], x)
			}
		}
	}
	var counts []int
	for n := range ns {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	fig := func(n int, c curveColumn) float64 {
		v := vals[fmt.Sprintf("%d|%s|%s", n, c.mode, c.key)]
		if len(v) == 0 {
			return math.NaN()
		}
		return median(v) * c.scale
	}
	var cols []curveColumn // those with a figure for some N
	for _, c := range curveColumns {
		for _, n := range counts {
			if !math.IsNaN(fig(n, c)) {
				cols = append(cols, c)
				break
			}
		}
	}
	// The table: one row per figure, one column per N (the curve reads left to right).
	var b strings.Builder
	b.WriteString("| containers |")
	for _, n := range counts {
		fmt.Fprintf(&b, " %d |", n)
	}
	b.WriteString("\n|---|")
	for range counts {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, c := range cols {
		b.WriteString("| " + c.title + " |")
		for _, n := range counts {
			if v := fig(n, c); math.IsNaN(v) {
				b.WriteString(" – |")
			} else {
				fmt.Fprintf(&b, " "+c.format+" |", v)
			}
		}
		b.WriteString("\n")
	}
	if len(errs) > 0 {
		b.WriteString("\nProblems seen in this run:\n\n" + strings.Join(errs, "\n") + "\n")
	}
	if *md == "" {
		fmt.Print(b.String())
	} else if err := os.WriteFile(*md, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if *dat != "" {
		var d strings.Builder
		d.WriteString("# n")
		for _, c := range curveColumns {
			d.WriteString(" " + c.mode + ":" + c.key)
		}
		d.WriteString("\n")
		for _, n := range counts {
			fmt.Fprintf(&d, "%d", n)
			for _, c := range curveColumns {
				fmt.Fprintf(&d, " %g", fig(n, c))
			}
			d.WriteString("\n")
		}
		if err := os.WriteFile(*dat, []byte(d.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
