package tests

// The documentation as a reader meets it: every spec it shows validates, and every
// command of README.md and docs/reference.md runs as written (README.md "Everyday commands").
//
// Conventions in the Markdown files:
//   - A ```yaml block is a whole spec unless its first line is "# fragment" (a piece of
//     a spec, shown for one field). A whole spec whose first line is "# NAME.yaml" is
//     the file the text asks the reader to save: the commands after it find it.
//   - A ```sh block is run line by line in a scratch directory holding bin/tend and a
//     copy of examples/. `make TARGET` lines are checked with `make -n TARGET` (the
//     targets build, run and test tend: this test is part of `make test`). A
//     `bin/tend run SPEC` line is started in the background, like the reader's first
//     terminal, and stopped (SIGTERM, exit 0 expected) after the file's last command.

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	file string
	line int // of the opening fence
	lang string
	text string
}

func (b docBlock) where() string { return b.file + ":" + strconv.Itoa(b.line) }

// docBlocks reads the fenced code blocks of a Markdown file (path relative to the repository).
func docBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	var cur *docBlock
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				cur = &docBlock{file: file, line: i + 1, lang: strings.TrimSpace(line[3:])}
			} else {
				blocks = append(blocks, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s: the code block opened on line %d is not closed", file, cur.line)
	}
	return blocks
}

// docFiles are the Markdown files of the repository that show specs.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "bench/README.md"}
	more, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		files = append(files, strings.TrimPrefix(f, "../"))
	}
	return files
}

func firstLine(text string) string {
	first, _, _ := strings.Cut(text, "\n")
	return strings.TrimSpace(first)
}

// savedAs is the file name a whole spec asks to be saved as ("# my.yaml"), or "".
var savedAs = regexp.MustCompile(`^# ([A-Za-z0-9._-]+\.ya?ml)$`)

// TestDocsSpecsValidate: every whole spec in the docs passes `tend validate`, and every
// JSON block parses.
func TestDocsSpecsValidate(t *testing.T) {
	whole := 0
	for _, file := range docFiles(t) {
		for _, b := range docBlocks(t, file) {
			switch {
			case b.lang == "json":
				if !json.Valid([]byte(b.text)) {
					t.Errorf("%s: the JSON block does not parse", b.where())
				}
			case b.lang == "yaml" && firstLine(b.text) != "# fragment":
				whole++
				dir := t.TempDir()
				path := filepath.Join(dir, "spec.yaml")
				if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(tendBin, "validate", path).CombinedOutput()
				if err != nil {
					t.Errorf("%s: a whole spec (mark a piece of one with a first line \"# fragment\") does not validate: %v\n%s", b.where(), err, out)
				}
			}
		}
	}
	if whole == 0 {
		t.Fatal("no whole spec found in the docs: the README's first spec is missing")
	}
}

// TestDocsCommands runs the shell blocks of README.md and docs/reference.md.
func TestDocsCommands(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the README's first spec runs python3, which is not installed")
	}
	for _, file := range []string{"README.md", "docs/reference.md"} {
		t.Run(strings.ReplaceAll(file, "/", "_"), func(t *testing.T) { runDocCommands(t, file) })
	}
}

var tendRun = regexp.MustCompile(`^bin/tend run (?:.* )?(\S+\.ya?ml)(?:\s+#.*)?$`)

func runDocCommands(t *testing.T, file string) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tendBin, filepath.Join(dir, "bin", "tend")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", "../examples", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy examples: %v: %s", err, out)
	}
	var runs []*docRun
	defer func() {
		for _, r := range runs {
			stopDocTend(t, r)
		}
	}()
	commands := 0
	for _, b := range docBlocks(t, file) {
		if b.lang == "yaml" {
			if m := savedAs.FindStringSubmatch(firstLine(b.text)); m != nil {
				if err := os.WriteFile(filepath.Join(dir, m[1]), []byte(b.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		// Only sh blocks run here; bash blocks need a container engine or a cluster
		// (docs/reference.md "Running in a container": make e2e runs its podman run line).
		if b.lang != "sh" {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(b.text))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			commands++
			where := b.file + ":" + strconv.Itoa(b.line+n)
			switch {
			case strings.HasPrefix(line, "make "):
				target := strings.Fields(line)[1]
				if out, err := exec.Command("make", "-C", "..", "-n", target).CombinedOutput(); err != nil {
					t.Errorf("%s: make has no target %q: %v\n%s", where, target, err, out)
				}
			case tendRun.MatchString(line):
				spec := tendRun.FindStringSubmatch(line)[1]
				cmd := exec.Command("bash", "-c", "exec "+line)
				cmd.Dir = dir
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				out := &syncBuffer{}
				cmd.Stdout, cmd.Stderr = out, out
				if err := cmd.Start(); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				r := &docRun{cmd: cmd, done: make(chan struct{})}
				go func() { r.err = cmd.Wait(); close(r.done) }()
				runs = append(runs, r)
				waitReady(t, where, filepath.Join(dir, filepath.Dir(spec), "tend.sock"), r, out)
			default:
				cmd := exec.Command("bash", "-c", line)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%s: %s: %v\n%s", where, line, err, out)
				}
			}
		}
	}
	if commands == 0 {
		t.Fatalf("%s: no commands found", file)
	}
}

// docRun is a `tend run` the commands started.
type docRun struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it exited; err is then its Wait's
	err  error
}

// waitReady waits until the tend that serves sock is ready, as a reader would before
// typing the next command. A spec that never gets ready is the next commands' problem.
func waitReady(t *testing.T, where, sock string, r *docRun, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if exec.Command(tendBin, "status", "--ready", "--listen", "unix:"+sock).Run() == nil {
			return
		}
		select {
		case <-r.done:
			t.Errorf("%s: tend run exited at once: %v; output:\n%s", where, r.err, out.String())
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("%s: not ready within 60 s; output:\n%s", where, out.String())
}

// stopDocTend stops a `tend run` the commands started (unless `tend shutdown` already
// did) and checks that it exited 0, as it does after a requested shutdown.
func stopDocTend(t *testing.T, r *docRun) {
	t.Helper()
	cmd := r.cmd
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.done:
		var exit *exec.ExitError
		if errors.As(r.err, &exit) {
			t.Errorf("%s exited %v", strings.Join(cmd.Args[2:], " "), r.err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("%s did not stop within 60 s of SIGTERM", strings.Join(cmd.Args[2:], " "))
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
	// Whatever its containers left in its process group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// mdLink is a Markdown link to a file of the repository or a heading: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's anchor of a heading: lower case, punctuation other than - and _
// dropped, spaces as -.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the headings' anchors of a Markdown file.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(line, "#") {
			got[slug(strings.TrimLeft(line, "#"))] = true
		}
	}
	return got
}

// TestDocsLinks: every link of the docs to a file of the repository, or to a heading,
// leads somewhere.
func TestDocsLinks(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			linked := file
			if path != "" {
				linked = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(filepath.Join("..", linked)); err != nil {
					t.Errorf("%s: link %s: %v", file, target, err)
					continue
				}
			}
			if anchor != "" && !anchors(t, linked)[anchor] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", file, target, linked)
			}
		}
	}
}
