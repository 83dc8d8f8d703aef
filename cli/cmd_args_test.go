package cli

import (
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestFlagsFirst(t *testing.T) {
	flags := []cli.Flag{
		&cli.StringSliceFlag{Name: "listen"},
		&cli.BoolFlag{Name: "json"},
		&cli.IntFlag{Name: "lines", Aliases: []string{"n"}},
	}
	for _, c := range []struct{ in, want string }{
		{"web", "-- web"},
		{"web --listen X", "--listen X -- web"},
		{"--listen X web", "--listen X -- web"},
		{"web --json b", "--json -- web b"}, // a bool flag takes no value
		{"web --listen=X --json=false", "--listen=X --json=false -- web"},
		{"a -n 5 b", "-n 5 -- a b"},                   // a short alias takes its value
		{"--lines 5 -json a", "--lines 5 -json -- a"}, // one dash works as well
		{"a -- --listen X", "-- a --listen X"},        // after --, nothing is a flag
		{"--bogus a", "--bogus -- a"},                 // unknown: left for urfave to report
		{"a --listen", "--listen -- a"},               // the missing value urfave reports
		{"- --json", "--json -- -"},                   // "-" is an argument (stdin)
		{"", ""},
	} {
		got := strings.Join(flagsFirst(flags, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("flagsFirst(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	app := newApp()
	for _, c := range []struct{ in, want, err string }{
		{"tend restart web --listen X", "tend restart --listen X -- web", ""},
		{"tend --version", "tend --version", ""},
		{"tend help status", "tend help status", ""},
		{"tend", "tend", ""},
		{"tend stats", "", `unknown command "stats"; did you mean "status"? (tend --help lists the commands)`},
		{"tend help stp", "", `unknown command "stp"; did you mean "stop"?`},
		{"tend xyzzy", "", `unknown command "xyzzy" (tend --help lists the commands)`},
	} {
		got, err := commandLine(app, strings.Fields(c.in))
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("commandLine(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, strings.Fields(c.want)) {
			t.Errorf("commandLine(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	names := []string{"run", "validate", "render", "status", "restart", "stop", "start", "reload", "shutdown", "version"}
	for _, c := range []struct{ typed, want string }{
		{"stats", "status"},
		{"stat", "status"},
		{"restrat", "restart"},
		{"valdate", "validate"},
		{"rn", "run"},
		{"xyzzy", ""},
		{"logs", ""},
	} {
		got := didYouMean(c.typed, names, "%s")
		want := ""
		if c.want != "" {
			want = "; did you mean " + c.want + "?"
		}
		if got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", c.typed, got, want)
		}
	}
}

func TestFormatVersion(t *testing.T) {
	build := func(mod string, settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Version: mod}}
		for i := 0; i+1 < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	for _, c := range []struct {
		version string
		info    *debug.BuildInfo
		want    string
	}{
		{"dev", nil, "tend dev"},
		{"dev", build("(devel)"), "tend dev"},
		{"dev", build("v1.2.3"), "tend v1.2.3"},
		{"v2.0.0", build("v1.2.3"), "tend v2.0.0"}, // -X wins
		{"dev", build("(devel)", "vcs.revision", "abc123", "vcs.modified", "false"), "tend abc123 (commit abc123)"},
		{"dev", build("(devel)", "vcs.revision", "0123456789abcdef", "vcs.time", "2026-11-26T10:00:00Z"), "tend 0123456789ab (commit 0123456789abcdef, 2026-11-26T10:00:00Z)"},
		{"v1.0.0", build("(devel)", "vcs.revision", "abc123", "vcs.time", "2026-11-26T10:00:00Z", "vcs.modified", "true"), "tend v1.0.0 (commit abc123, 2026-11-26T10:00:00Z, modified)"},
		{"dev", build("v0.0.0-2026-abc123", "vcs.revision", "abc123", "vcs.modified", "true"), "tend v0.0.0-2026-abc123 (commit abc123, modified)"},
	} {
		if got := formatVersion(c.version, c.info); got != c.want {
			t.Errorf("formatVersion(%q, %+v) = %q, want %q", c.version, c.info, got, c.want)
		}
	}
}
