package main

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

// The zsh and fish scripts name every command and flag (no zsh or fish to run here).
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
