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
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			if callsAlone(fn.Body) {
				seen[fn.Name.Name] = true
			}
		}
		return nil
	})
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, err
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
