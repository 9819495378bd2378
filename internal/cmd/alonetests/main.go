// Command alonetests prints a go test -run/-skip pattern matching every top-level test of
// the tree under the current directory that calls testmachine.Alone: the tests that
// measure (round trips, rates, clock offsets, CPU saturation) and must have the machine
// to themselves. `make test` runs the others side by side first, then these one at a
// time, so that no test waits for the machine to drain (internal/testmachine).
//
//	alonetests [DIR]      # ^(TestA|TestB)$, or nothing when there is none
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	names, err := aloneTests(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "alonetests:", err)
		os.Exit(2)
	}
	if len(names) > 0 {
		fmt.Printf("^(%s)$\n", strings.Join(names, "|"))
	}
}

// aloneTests returns the sorted, distinct names of the top-level Test functions in the
// _test.go files under dir whose bodies call testmachine.Alone.
func aloneTests(dir string) ([]string, error) {
	seen := map[string]bool{}
	err := eachTestFunc(dir, func(_ *token.FileSet, fn *ast.FuncDecl) {
		if callsAlone(fn.Body) {
			seen[fn.Name.Name] = true
		}
	})
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, err
}

// eachTestFunc calls f with each top-level Test function (with a body) of the _test.go
// files under dir, testdata, node_modules and hidden directories left out, and the file
// set their positions are in. Errors: the walk's, or a file that does not parse.
func eachTestFunc(dir string, f func(fset *token.FileSet, fn *ast.FuncDecl)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != dir && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil && strings.HasPrefix(fn.Name.Name, "Test") {
				f(fset, fn)
			}
		}
		return nil
	})
}

// callsAlone reports whether body calls testmachine.Alone (directly, not through a helper).
func callsAlone(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Alone" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "testmachine" {
				found = true
			}
		}
		return !found
	})
	return found
}
