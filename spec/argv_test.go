package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestArgvString(t *testing.T) {
	env := []string{"HOME=/home/u", "EMPTY=", "TWO=a  b", "EDGE= x ", "HOME=/root", "MY_ENV_VAR=v1"}
	tests := []struct {
		in   string
		want []string
	}{
		{"./server --port 8080", []string{"./server", "--port", "8080"}},
		{"  a \t b\n c  ", []string{"a", "b", "c"}},
		{`echo 'a b' "c d" e\ f`, []string{"echo", "a b", "c d", "e f"}},
		{`echo '' ""`, []string{"echo", "", ""}},
		{`echo a''b "x"'y'z`, []string{"echo", "ab", "xyz"}},
		// single quotes keep everything literal
		{`echo '$HOME ${HOME} \n "q" $(x) ` + "`x`'", []string{"echo", `$HOME ${HOME} \n "q" $(x) ` + "`x`"}},
		// double quotes: \ only before $ ` " \ newline
		{`echo "a\$b \"q\" \\ \n \x"`, []string{"echo", `a$b "q" \ \n \x`}},
		{`echo \$HOME \\ \' \"`, []string{"echo", "$HOME", `\`, "'", `"`}},
		{"echo a\\\nb", []string{"echo", "ab"}},
		// $VAR and ${VAR}; the last assignment in env wins; unset is empty
		{`echo $HOME ${HOME}/x "$HOME" $HOME_X x$UNSET.y`, []string{"echo", "/root", "/root/x", "/root", "x.y"}},
		{`echo "$UNSET" $UNSET end`, []string{"echo", "", "end"}},
		// an unquoted expansion splits into words, a quoted one does not
		{`prog $TWO "$TWO"`, []string{"prog", "a", "b", "a  b"}},
		{`prog x$TWO${EDGE}y`, []string{"prog", "xa", "b", "x", "y"}},
		{`prog $EMPTY "" $EMPTY`, []string{"prog", ""}},
		// $ that starts nothing is literal
		{`echo $ $1 $@ a$ "$" "$1"`, []string{"echo", "$", "$1", "$@", "a$", "$", "$1"}},
		// shell operators are plain arguments: never a shell
		{`cat a | grep b > out; x & y < z`, []string{"cat", "a", "|", "grep", "b", ">", "out;", "x", "&", "y", "<", "z"}},
		{`ls *.go ~/x #c`, []string{"ls", "*.go", "~/x", "#c"}},
		// ${{MY_ENV_VAR}} is ${MY_ENV_VAR} after {VAR} substitution
		{`sh -c 'echo ${MY_ENV_VAR}'`, []string{"sh", "-c", "echo ${MY_ENV_VAR}"}},
		{`echo ${MY_ENV_VAR}`, []string{"echo", "v1"}},
		// the escaped $( is not command substitution (POSIX: inside single
		// quotes the backslash stays and reaches bash)
		{`bash -c 'command --arg \$(helper_command)'`, []string{"bash", "-c", `command --arg \$(helper_command)`}},
		{`bash -c 'command --arg $(helper_command)'`, []string{"bash", "-c", `command --arg $(helper_command)`}},
		{"echo \\$(x) \"\\$(y)\" \\`z\\`", []string{"echo", "$(x)", "$(y)", "`z`"}},
	}
	for _, tt := range tests {
		got, err := Argv(Command{String: tt.in}, env)
		if err != nil {
			t.Errorf("Argv(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Argv(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestArgvErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`echo $(date)`, "command substitution is not supported"},
		{`echo "$(date)"`, "command substitution is not supported"},
		{"echo `date`", "command substitution is not supported"},
		{"echo \"`date`\"", "command substitution is not supported"},
		{`echo $((1+2))`, "command substitution is not supported"},
		{`echo x$(date)y`, "command substitution is not supported"},
		{`echo 'abc`, "unterminated single quote"},
		{`echo "abc`, "unterminated double quote"},
		{`echo abc\`, "trailing backslash"},
		{`echo ${HOME`, "unterminated ${"},
		{`echo ${HOME:-x}`, "bad substitution ${HOME:-x}"},
		{`echo ${}`, "bad substitution ${}"},
		{``, "empty command"},
		{`   `, "empty command"},
		{`$UNSET`, "empty command"},
		{`"" arg`, "empty command"},
	}
	for _, tt := range tests {
		_, err := Argv(Command{String: tt.in}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Argv(%q) error = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
	if _, err := Argv(Command{String: "a $(b)"}, nil); !errors.Is(err, ErrCommandSubstitution) {
		t.Errorf("Argv command substitution error = %v, want ErrCommandSubstitution", err)
	}
}

func TestArgvList(t *testing.T) {
	list := []string{"sh", "-c", `echo $HOME "$(date)" | cat`}
	got, err := Argv(Command{List: list, IsList: true}, []string{"HOME=/x"})
	if err != nil || !reflect.DeepEqual(got, list) {
		t.Fatalf("Argv(list) = %q, %v; want the list as is", got, err)
	}
	got[0] = "changed"
	if list[0] != "sh" {
		t.Error("Argv returned the spec's own slice")
	}
	for _, bad := range [][]string{nil, {}, {""}} {
		if _, err := Argv(Command{List: bad, IsList: true}, nil); err == nil {
			t.Errorf("Argv(list %q) succeeded, want an error", bad)
		}
	}
}
