package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	apiserver "github.com/tend-sh/tend/api" // cli's own api is the client
	"github.com/tend-sh/tend/convert"
	"github.com/tend-sh/tend/internal/footprint"
	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/revisions"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
	"github.com/tend-sh/tend/supervisor"
)

// listenFlag is shared by run, status and the control commands.
var listenFlag = &cli.StringSliceFlag{
	Name:    "listen",
	Usage:   "API address: unix:PATH or HOST:PORT (repeatable for run)",
	EnvVars: []string{"TEND_LISTEN"},
}

// tokenFlag is the bearer token of the clients (status, control, logs, describe) for a
// TCP address.
var tokenFlag = &cli.StringFlag{Name: "api-token-file", Usage: "bearer token for a TCP address", EnvVars: []string{"TEND_API_TOKEN_FILE"}}

// varFlag adds substitution variables; shared by run, validate and render.
var varFlag = &cli.StringSliceFlag{
	Name:    "var",
	Usage:   "substitution variable NAME=VALUE (repeatable)",
	EnvVars: []string{"TEND_VAR"},
}

// runCommand is `tend run SPEC`, the main job.
func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run the instance in the foreground (PID 1 capable)",
		ArgsUsage: "SPEC",
		Flags: []cli.Flag{
			listenFlag,
			&cli.StringFlag{Name: "api-token-file", Usage: "file with the bearer token for mutating calls over TCP", EnvVars: []string{"TEND_API_TOKEN_FILE"}},
			&cli.StringFlag{Name: "report-url", Usage: "POST the status document here on every change and every --report-interval", EnvVars: []string{"TEND_REPORT_URL"}},
			&cli.DurationFlag{Name: "report-interval", Usage: "heartbeat period of the report", Value: 3 * time.Minute, EnvVars: []string{"TEND_REPORT_INTERVAL"}},
			&cli.StringFlag{Name: "log-format", Usage: "auto|console|json", Value: "auto", EnvVars: []string{"TEND_LOG_FORMAT"}},
			&cli.StringFlag{Name: "log-level", Usage: "debug|info|warn|error", Value: "info", EnvVars: []string{"TEND_LOG_LEVEL"}},
			varFlag,
			&cli.BoolFlag{Name: "watch", Usage: "reload when the spec file's content changes", EnvVars: []string{"TEND_WATCH"}},
			formatFlag,
			&cli.BoolFlag{Name: "timestamps", Usage: "put the time before every line of the containers' output", EnvVars: []string{"TEND_TIMESTAMPS"}},
		},
		Action: runInstance,
	}
}

// runInstance loads the spec and runs the supervisor until the instance ends; a
// reload loads the spec again the same way.
func runInstance(c *cli.Context) error {
	if _, err := specArg(c); err != nil {
		return err
	}
	// Begun before anything else so that it overlaps with loading the spec.
	process := supervisor.SetUpProcess()
	stdout, stderr := consoleOutput(os.Stdout, c.Bool("timestamps")), consoleOutput(os.Stderr, c.Bool("timestamps"))
	defer flushConsoles(stdout, stderr)
	log, err := newLogger(stderr, isTerminal(os.Stderr), c.String("log-format"), c.String("log-level"))
	if err != nil {
		return fail(2, "run: %v", err)
	}
	path, vars, format := c.Args().First(), c.StringSlice("var"), c.String("format")
	load := func() (*spec.Spec, error) {
		s, err := loadSpecKeyed(path, vars, format, logWarnings(log, path), revisionKey)
		if err != nil {
			return nil, err
		}
		stdout.Align(specNames(s)...)
		stderr.Align(specNames(s)...)
		return s, nil
	}
	s, err := load()
	if err != nil {
		return specFailure(path, err)
	}
	if err := checkRoot(s); err != nil {
		return fail(1, "run: %v", err)
	}
	settleReady := footprint.SettleAfterStartup()
	sv := supervisor.New(s, supervisor.Options{
		OnReady: settleReady,
		Load: func() (*spec.Spec, error) {
			s, err := load()
			if err == nil {
				err = checkRoot(s)
			}
			return s, locatedErrors(path, err)
		},
		LoadBytes: func(name string, data []byte) (*spec.Spec, error) {
			opts, err := loadOptions(vars)
			if err != nil {
				return nil, err
			}
			opts.RevisionKey = revisionKey
			s, _, err := convert.LoadBytes(name, data, convert.Auto, opts)
			if err == nil {
				err = checkRoot(s)
			}
			return s, err
		},
		Listen:       c.StringSlice("listen"),
		APITokenFile: c.String("api-token-file"),
		Serve:        serveAPI(log),
		Report:       reportTo(c.String("report-url"), c.Duration("report-interval"), log),
		Log:          log,
		Stdout:       stdout,
		Stderr:       stderr,
		Process:      process,
		WatchPath:    watchPath(c.Bool("watch"), path),
	})
	code, err := sv.Run(context.Background())
	if err != nil {
		return fail(1, "%v", err)
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// revisionKey is the key of the keyed digest in revision ids, kept in instance.dir's
// .tend/ (docs/reference.md "Updates and rollback").
func revisionKey(instanceDir string) []byte { return revisions.Open(instanceDir).Key() }

// watchPath is the spec file to watch for --watch, or "" without it.
func watchPath(watch bool, path string) string {
	if !watch {
		return ""
	}
	return path
}

// logWarnings logs the format of a converted spec and each of its warnings.
func logWarnings(log zerolog.Logger, path string) func(*convert.Result) {
	return func(res *convert.Result) {
		log.Info().Str("spec", path).Str("format", res.Format).Int("warnings", len(res.Warnings)).Msg("spec converted from " + res.Format)
		for _, w := range res.Warnings {
			log.Warn().Str("spec", path).Int("line", w.Line).Msg(w.String())
		}
	}
}

// consoleOutput is one of tend's streams as the containers' lines and tend's own log
// go to it: through a Queue, so that a stream nobody reads never stalls supervision.
func consoleOutput(f *os.File, timestamps bool) *output.Console {
	return output.NewStyledConsole(output.NewQueue(f), consoleStyle(f, timestamps))
}

// consoleFlushTimeout bounds how long tend, exiting, waits for its console streams to
// take what is queued for them: a stream nobody reads must not hold the exit.
const consoleFlushTimeout = 2 * time.Second

// flushConsoles writes out what is queued for tend's console streams, for at most
// consoleFlushTimeout in all.
func flushConsoles(outs ...*output.Console) {
	ctx, cancel := context.WithTimeout(context.Background(), consoleFlushTimeout)
	defer cancel()
	for _, o := range outs {
		o.Flush(ctx)
	}
}

// consoleStyle colours names on a terminal unless NO_COLOR is set
// (https://no-color.org) or TERM is dumb, and aligns them there; a pipe or a file gets
// neither escape codes nor padding: exactly "NAME | line".
func consoleStyle(f *os.File, timestamps bool) output.Style {
	terminal := isTerminal(f)
	color := terminal && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	return output.Style{Color: color, Timestamps: timestamps, Align: terminal}
}

// newLogger builds tend's own logger: console on a terminal, JSON otherwise. w is
// tend's stderr as the containers' stderr lines go to it, so that a log line and a
// child's line are written one after the other, never into one another.
func newLogger(w io.Writer, terminal bool, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level: unknown level %q (debug, info, warn, error)", level)
	}
	switch format {
	case "auto":
		if terminal {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: os.Getenv("NO_COLOR") != "", FormatErrFieldValue: errLines}
		}
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: true, FormatErrFieldValue: errLines}
	case "json":
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format: unknown format %q (auto, console, json)", format)
	}
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	zerolog.DurationFieldInteger = true // durations as whole milliseconds
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// errLines shows a multi-line error (a reload's spec errors) on the console as lines
// of their own, indented under the log line, instead of one quoted string with \n in it.
func errLines(v any) string {
	s := fmt.Sprint(v)
	text, err := strconv.Unquote(s)
	if err != nil || !strings.Contains(text, "\n") {
		return s
	}
	return "\n    " + strings.ReplaceAll(text, "\n", "\n    ")
}

// locatedErrors gives the field errors of a spec the file and line of each, as
// `tend validate` prints them ("SPEC:LINE: path: message", one a line, in document
// order): the text a failed reload shows in the log, the status and the API answer.
func locatedErrors(path string, err error) error {
	var errs *spec.Errors
	if !errors.As(err, &errs) {
		return err
	}
	return &specErrors{text: strings.TrimSuffix(formatSpecErrors(path, errs), "\n"), errs: errs}
}

// specErrors is a *spec.Errors with the file and lines in its text.
type specErrors struct {
	text string
	errs *spec.Errors
}

func (e *specErrors) Error() string { return e.text }
func (e *specErrors) Unwrap() error { return e.errs }

// specNames is the names of s's init containers and containers, which the console's
// prefixes are aligned to.
func specNames(s *spec.Spec) []string {
	var ns []string
	for _, c := range s.InitContainers {
		ns = append(ns, c.Name)
	}
	for _, c := range s.Containers {
		ns = append(ns, c.Name)
	}
	return ns
}

// serveAPI is the supervisor's Options.Serve: the API (package api) on listen.
// The command line wires it in: api serves the supervisor, which knows it only as
// supervisor.API.
func serveAPI(log zerolog.Logger) func(*supervisor.Supervisor, []string, string) (supervisor.API, error) {
	return func(sv *supervisor.Supervisor, listen []string, token string) (supervisor.API, error) {
		srv, err := apiserver.Serve(sv, apiserver.Config{Listen: listen, Token: token, Log: log})
		if err != nil {
			return nil, err
		}
		return srv, nil
	}
}

// reportTo is the supervisor's Options.Report: the status reports to url every
// interval and on every change (--report-url); nil without a url.
func reportTo(url string, interval time.Duration, log zerolog.Logger) func(func() status.Document) supervisor.Reporter {
	if url == "" {
		return nil
	}
	return func(statusDoc func() status.Document) supervisor.Reporter {
		return apiserver.StartReporter(url, interval, statusDoc, log)
	}
}
