package answer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the package may be, so that
// the answer flow stays in phases a reader can name.
const maxFuncLines = 60

// TestFunctionsAreShort holds the rule: no function of the package (its
// tests aside) is over maxFuncLines lines.
func TestFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, over %d", name, start, fn.Name.Name, n, maxFuncLines)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no functions checked")
	}
}
