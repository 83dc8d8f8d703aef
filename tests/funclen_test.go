package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest body (the lines between its braces) a function of the
// packages that hold the lifecycles may have: a container's events and the
// instance's phases read as named steps (docs/design.md "The rooms").
const maxFuncLines = 40

// TestFunctionsShort fails when a function of container/ or supervisor/ (tests
// aside) grows past maxFuncLines: split it into steps named like what they do.
func TestFunctionsShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range []string{"../container", "../supervisor"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s (%v)", dir, err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				lines := fset.Position(fn.Body.Rbrace).Line - fset.Position(fn.Body.Lbrace).Line - 1
				if lines > maxFuncLines {
					t.Errorf("%s: %s has %d lines, more than %d", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
				}
			}
		}
	}
}
