package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var b strings.Builder
	cmds := completionCommands(newApp())
	switch shell {
	case "bash":
		writeBash(&b, cmds)
	case "zsh":
		writeZsh(&b, cmds)
	case "fish":
		writeFish(&b, cmds)
	}
	return b.String()
}

// The bash script parses, and completing in bash gives commands, flags and values.
func TestBashCompletion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tend.bash")
	if err := os.WriteFile(path, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v: %s", err, out)
	}
	tests := []struct{ line, want string }{
		{"tend sta", "status start"},
		{"tend stat", "status"},
		{"tend sch", "schema"},
		{"tend run --log-f", "--log-format"},
		{"tend run --log-format j", "json"},
		{"tend run --ti", "--timestamps"},
		{"tend status --r", "--ready"},
		{"tend render --format pod", "pod_agent"},
		{"tend completion z", "zsh"},
		{"tend run exa", ""}, // file names: left to complete -o default
	}
	for _, tt := range tests {
		words := strings.Fields(tt.line)
		script := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tend; echo "${COMPREPLY[*]}"`
		out, err := exec.Command("bash", append([]string{"-c", script, "bash", path}, words...)...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tt.want {
			t.Errorf("%q completes to %q (%v), want %q", tt.line, strings.TrimSpace(string(out)), err, tt.want)
		}
	}
}

// The zsh and fish scripts name every command and flag.
func TestZshFishCompletionNameEverything(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		script := completionScript(t, shell)
		for _, c := range completionCommands(newApp()) {
			if !strings.Contains(script, c.name) {
				t.Errorf("%s script lacks command %s", shell, c.name)
			}
			for _, f := range c.flags {
				if !strings.Contains(script, strings.TrimLeft(f.name, "-")) {
					t.Errorf("%s script lacks %s %s", shell, c.name, f.name)
				}
			}
		}
	}
}

// writeScript writes the completion script of shell and returns its path, or skips
// the test when that shell is not installed (.ci/run installs zsh and fish).
func writeScript(t *testing.T, shell string) string {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Skipf("%s is not installed", shell)
	}
	path := filepath.Join(t.TempDir(), "_tend")
	if err := os.WriteFile(path, []byte(completionScript(t, shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fish completes commands, flags and flag values from the script.
func TestFishCompletion(t *testing.T) {
	path := writeScript(t, "fish")
	tests := []struct{ line, want string }{
		{"tend sta", "start status"},
		{"tend sch", "schema"},
		{"tend run --log-f", "--log-format"},
		{"tend run --log-format ", "auto console json"},
		{"tend status --r", "--ready"},
		{"tend render --format pod", "pod_agent"},
		{"tend completion z", "zsh"},
	}
	for _, tt := range tests {
		// complete -C prints "candidate<TAB>description" lines.
		out, err := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, path, tt.line).CombinedOutput()
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("%q completes to %q (%v), want %q\n%s", tt.line, strings.Join(got, " "), err, tt.want, out)
		}
	}
}

// zsh loads the script with compinit and registers it for tend; with zsh's
// _describe and _arguments replaced by printers, _tend offers the commands, and each
// command's flags with their values.
func TestZshCompletion(t *testing.T) {
	path := writeScript(t, "zsh")
	if out, err := exec.Command("zsh", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v: %s", err, out)
	}
	out, err := exec.Command("zsh", "-f", "-c", `autoload -U compinit; compinit -u -D; source $1; print -r -- $_comps[tend]`, "zsh", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "_tend" {
		t.Fatalf("after compinit and source, tend completes with %q (%v), want _tend", out, err)
	}
	stubs := `compdef(){}; _describe(){ local n=${@[-1]}; print -rl -- ${(P)n} }; _arguments(){ print -rl -- "$@" }; source $1; shift; words=("$@"); CURRENT=$#; _tend`
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{"tend", ""}, []string{"run:run the instance", "status:query a running tend", "completion:print a shell completion script"}},
		{[]string{"tend", "run", ""}, []string{"--log-format[auto|console|json]:value:(auto console json)", "--timestamps[", "*:file:_files"}},
		{[]string{"tend", "status", ""}, []string{"--ready["}},
		{[]string{"tend", "completion", ""}, []string{"bash", "zsh", "fish"}},
	}
	for _, tt := range tests {
		out, err := exec.Command("zsh", append([]string{"-f", "-c", stubs, "zsh", path}, tt.words...)...).CombinedOutput()
		for _, w := range tt.want {
			if err != nil || !strings.Contains(string(out), w) {
				t.Errorf("%q: _tend offers no %q (%v):\n%s", strings.Join(tt.words, " "), w, err, out)
			}
		}
	}
}
