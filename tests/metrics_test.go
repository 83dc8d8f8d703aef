package tests

import (
	"bytes"
	"io"
	"net/url"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tend-sh/tend/status"
)

// metricFamily is one family as the "Metrics" table of docs/reference.md documents it.
type metricFamily struct {
	typ    dto.MetricType
	labels []string // label names of every sample, sorted (a histogram's le aside)
}

// documentedMetrics is the "Metrics" table of docs/reference.md: /metrics must expose exactly these.
var documentedMetrics = map[string]metricFamily{
	"tend_instance_ready":              {dto.MetricType_GAUGE, nil},
	"tend_instance_installed":          {dto.MetricType_GAUGE, nil},
	"tend_container_state":             {dto.MetricType_GAUGE, []string{"container", "state"}},
	"tend_container_ready":             {dto.MetricType_GAUGE, []string{"container"}},
	"tend_container_alive":             {dto.MetricType_GAUGE, []string{"container"}},
	"tend_container_restarts_total":    {dto.MetricType_COUNTER, []string{"container"}},
	"tend_container_cpu_seconds_total": {dto.MetricType_COUNTER, []string{"container"}},
	"tend_container_memory_bytes":      {dto.MetricType_GAUGE, []string{"container"}},
	"tend_container_pids":              {dto.MetricType_GAUGE, []string{"container"}},
	"tend_container_oom_kills_total":   {dto.MetricType_COUNTER, []string{"container"}},
	"tend_probe_checks_total":          {dto.MetricType_COUNTER, []string{"container", "probe", "result"}},
	"tend_probe_duration_seconds":      {dto.MetricType_HISTOGRAM, []string{"container", "probe"}},
	"tend_orphans_reaped_total":        {dto.MetricType_COUNTER, nil},
	"tend_console_dropped_lines_total": {dto.MetricType_COUNTER, nil},
	"tend_revision_active":             {dto.MetricType_GAUGE, []string{"revision"}},
	"tend_rollbacks_total":             {dto.MetricType_COUNTER, nil},
	"process_cpu_seconds_total":        {dto.MetricType_COUNTER, nil},
	"process_resident_memory_bytes":    {dto.MetricType_GAUGE, nil},
	"process_virtual_memory_bytes":     {dto.MetricType_GAUGE, nil},
	"process_open_fds":                 {dto.MetricType_GAUGE, nil},
	"process_max_fds":                  {dto.MetricType_GAUGE, nil},
	"process_start_time_seconds":       {dto.MetricType_GAUGE, nil},
	"go_goroutines":                    {dto.MetricType_GAUGE, nil},
}

// /metrics of a tend with several containers, an HTTP and an exec probe, a restart and
// a resource is valid Prometheus text: Prometheus' own parser reads it, every family
// has one HELP (with text) and one TYPE line and all its samples together, and the
// families and label sets are the documented ones. promtool, when installed, agrees.
func TestMetricsExposition(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/healthz": "ok", "/model.bin": "the model\n"})
	u, _ := url.Parse(srv.URL)
	tp := start(t, `
resources:
  - {name: model.bin, urls: ["`+srv.URL+`/model.bin"], checksum: "`+md5of("the model\n")+`"}
containers:
  - name: web
    command: ["sleep", "600"]
    liveness_probe:
      http_get: {host: 127.0.0.1, port: "`+u.Port()+`", path: /healthz}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 50, max_restart_period_ms: 50}
    readiness_probe:
      exec: {command: ["true"]}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 50, max_restart_period_ms: 50}
  - name: crash-once
    command: ["sh", "-c", "[ -e {DIR}/crashed ] && exec sleep 600; touch {DIR}/crashed; exit 3"]
    restart_policy: {min_period_ms: 10, max_jitter_ms: 0}
  - name: plain
    command: ["sleep", "600"]
`)
	tp.waitStatus(15*time.Second, "every container running, crash-once restarted, web ready", func(d status.Document) bool {
		for _, c := range d.Containers {
			if c.State != status.Running {
				return false
			}
		}
		return containerStatus(d, "crash-once").Restarts >= 1 && containerStatus(d, "web").Ready.True() && d.Ready.True()
	})
	// Both probes have checked (and passed) at least once.
	var text []byte
	var families map[string]*dto.MetricFamily
	waitFor(t, 10*time.Second, "probe checks in /metrics", func() (bool, string) {
		resp, err := tp.client().Get("http://tend/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Fatalf("Content-Type = %q", ct)
		}
		text, _ = io.ReadAll(resp.Body)
		p := expfmt.NewTextParser(model.LegacyValidation)
		families, err = p.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("Prometheus' parser rejects /metrics: %v\n%s", err, text)
		}
		return sampleValue(families, "tend_probe_checks_total", "container=web,probe=liveness,result=success") > 0 &&
			sampleValue(families, "tend_probe_checks_total", "container=web,probe=readiness,result=success") > 0 &&
			// The usage sampler has read plain's sleep (once a second).
			sampleValue(families, "tend_container_memory_bytes", "container=plain") > 0 &&
			sampleValue(families, "tend_container_pids", "container=plain") >= 1, string(text)
	})

	checkGrouped(t, string(text))
	var names []string
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := documentedMetrics[name]; !ok {
			t.Errorf("family %s is not documented", name)
		}
	}
	for name, want := range documentedMetrics {
		mf := families[name]
		if mf == nil {
			t.Errorf("family %s is missing", name)
			continue
		}
		if mf.GetType() != want.typ {
			t.Errorf("family %s has type %v, want %v", name, mf.GetType(), want.typ)
		}
		if mf.GetHelp() == "" {
			t.Errorf("family %s has no HELP text", name)
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName())
			}
			sort.Strings(got)
			if !slices.Equal(got, want.labels) {
				t.Errorf("%s sample has labels %v, want %v", name, got, want.labels)
			}
		}
	}

	for _, c := range []string{"web", "crash-once", "plain"} {
		if v := sampleValue(families, "tend_container_state", "container="+c+",state=running"); v != 1 {
			t.Errorf("tend_container_state{container=%q,state=running} = %v, want 1", c, v)
		}
		states := 0
		for _, m := range families["tend_container_state"].GetMetric() {
			if labelValue(m, "container") == c {
				states++
			}
		}
		if states != 8 {
			t.Errorf("container %s has %d state samples, want one per state (8)", c, states)
		}
	}
	if v := sampleValue(families, "tend_container_restarts_total", "container=crash-once"); v < 1 {
		t.Errorf("tend_container_restarts_total{container=crash-once} = %v, want >= 1", v)
	}
	for _, probe := range []string{"liveness", "readiness"} {
		h := sampleOf(families, "tend_probe_duration_seconds", "container=web,probe="+probe).GetHistogram()
		if h.GetSampleCount() == 0 || len(h.GetBucket()) == 0 {
			t.Errorf("tend_probe_duration_seconds{container=web,probe=%s} = %v, want observations in buckets", probe, h)
		}
	}
	for _, name := range []string{"tend_instance_ready", "tend_instance_installed", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds", "go_goroutines"} {
		if v := sampleValue(families, name, ""); v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}

	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not on PATH: skipped `promtool check metrics`")
	}
	termAndWait(t, tp, 10*time.Second)
}

// checkGrouped fails t unless every family in text has exactly one HELP line with
// text and one TYPE line, before its samples, and all its samples in one run of lines
// (Prometheus' parser accepts a family's samples scattered; the format does not).
func checkGrouped(t *testing.T, text string) {
	t.Helper()
	types := map[string]string{}
	help := map[string]int{}
	done := map[string]bool{} // families whose run of lines has ended
	current := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var family string
		switch {
		case strings.HasPrefix(line, "# HELP "):
			f := strings.SplitN(line, " ", 4)
			family = f[2]
			if len(f) < 4 || strings.TrimSpace(f[3]) == "" {
				t.Errorf("line %d: HELP without text: %q", i+1, line)
			}
			help[family]++
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			family = f[2]
			if _, dup := types[family]; dup {
				t.Errorf("line %d: second TYPE line for %s", i+1, family)
			}
			types[family] = f[3]
		case strings.HasPrefix(line, "#") || line == "":
			continue
		default:
			family = sampleFamily(line, types)
			if _, ok := types[family]; !ok {
				t.Errorf("line %d: sample of %s before its TYPE line: %q", i+1, family, line)
			}
		}
		if family != current {
			if done[family] {
				t.Errorf("line %d: family %s continues after other families: %q", i+1, family, line)
			}
			if current != "" {
				done[current] = true
			}
			current = family
		}
	}
	for family := range types {
		if help[family] != 1 {
			t.Errorf("family %s has %d HELP lines, want 1", family, help[family])
		}
	}
}

// sampleFamily is the family a sample line belongs to: its name, less the _bucket,
// _sum or _count suffix of a histogram or summary.
func sampleFamily(line string, types map[string]string) string {
	name := line[:strings.IndexAny(line, "{ ")]
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (types[base] == "histogram" || types[base] == "summary") {
			return base
		}
	}
	return name
}

// sampleOf finds the sample of family name whose labels are exactly labels
// ("k=v,k=v" in sorted order; "" for none).
func sampleOf(families map[string]*dto.MetricFamily, name, labels string) *dto.Metric {
	for _, m := range families[name].GetMetric() {
		var kv []string
		for _, lp := range m.GetLabel() {
			kv = append(kv, lp.GetName()+"="+lp.GetValue())
		}
		sort.Strings(kv)
		if strings.Join(kv, ",") == labels {
			return m
		}
	}
	return nil
}

// sampleValue is the value of a counter or gauge sample, or -1 when there is none.
func sampleValue(families map[string]*dto.MetricFamily, name, labels string) float64 {
	m := sampleOf(families, name, labels)
	switch {
	case m == nil:
		return -1
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

func labelValue(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
