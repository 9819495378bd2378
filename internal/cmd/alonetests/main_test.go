package main

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAloneTests: a test that calls testmachine.Alone is found, one that only mentions it
// in a comment or calls another package's Alone is not, and files under testdata are not read.
func TestAloneTests(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a_test.go", "package a\nimport \"testing\"\nfunc TestTimes(t *testing.T) {\n\ttestmachine.Alone(t)\n}\nfunc TestWaits(t *testing.T) {\n\t// testmachine.Alone(t) is not called\n\tother.Alone(t)\n}\nfunc helper(t *testing.T) { testmachine.Alone(t) }\n")
	write("b/b_test.go", "package b\nimport \"testing\"\nfunc TestRatio(t *testing.T) {\n\tif true {\n\t\ttestmachine.Alone(t)\n\t}\n}\n")
	write("b/testdata/x_test.go", "package x\nfunc TestIgnored(t *testing.T) { testmachine.Alone(t) }\n")
	write("c/c.go", "package c\nfunc TestNotATestFile() { testmachine.Alone(nil) }\n")
	got, err := aloneTests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"TestRatio", "TestTimes"}) {
		t.Errorf("alone tests %v, want [TestRatio TestTimes]", got)
	}
}

// TestShortSkipBeforeAlone: in the module's tests, a test that calls testmachine.Alone and
// skips in -short mode (testing.Short()) checks it first: Alone takes the machine-wide
// exclusive lock, waiting for every test that shares the machine and making the others
// wait, which a test about to skip must not do.
func TestShortSkipBeforeAlone(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	checked := 0
	err := eachTestFunc(root, func(fset *token.FileSet, fn *ast.FuncDecl) {
		if !callsAlone(fn.Body) {
			return
		}
		checked++
		alone, short := token.NoPos, token.NoPos
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					switch {
					case id.Name == "testmachine" && sel.Sel.Name == "Alone" && !alone.IsValid():
						alone = call.Pos()
					case id.Name == "testing" && sel.Sel.Name == "Short" && !short.IsValid():
						short = call.Pos()
					}
				}
			}
			return true
		})
		if short.IsValid() && short > alone {
			t.Errorf("%s: %s checks testing.Short() after testmachine.Alone (%s): skip first", fset.Position(short), fn.Name.Name, fset.Position(alone))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no test calling testmachine.Alone found under the module: wrong root?")
	}
}
