// Command filedeps counts the objects (funcs, methods, types, vars, consts, fields) that
// one set of a package's files uses and another set of its files declares: a check that
// a seam between files holds (docs/development.md, "Files of package cluster").
//
//	filedeps -pkg ./cluster -from 'hosts_*' -to 'sandbox_*'
//
// -from and -to are comma-separated globs matched against file base names (filepath.Match);
// a glob that starts with "!" excludes the files it matches ("*,!sandbox_*").
// Only the package's non-test Go files for this machine's build are read. It prints each
// object used (its name and declaring file), then the count; the exit status is 0 either
// way (2 when the package cannot be read or type-checked, or when -from or -to has a
// malformed glob or matches no file of the package).
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	pkg := flag.String("pkg", ".", "the package's directory")
	from := flag.String("from", "", "comma-separated globs: the files whose uses are counted")
	to := flag.String("to", "", "comma-separated globs: the files whose declarations count")
	flag.Parse()
	if *from == "" || *to == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: filedeps -pkg DIR -from GLOBS -to GLOBS")
		os.Exit(2)
	}
	refs, err := fileDeps(*pkg, globs(*from), globs(*to))
	if err != nil {
		fmt.Fprintln(os.Stderr, "filedeps:", err)
		os.Exit(2)
	}
	for _, r := range refs {
		fmt.Printf("%s\t%s\n", r.Name, r.File)
	}
	fmt.Printf("%d object(s) used from %s declared in %s\n", len(refs), *from, *to)
}

func globs(s string) []string {
	var out []string
	for g := range strings.SplitSeq(s, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// checkGlobs is an error naming flag and the globs when one of them is malformed or
// when they match none of files: a misspelt glob or a renamed file would otherwise make a
// seam's count 0 without checking anything.
func checkGlobs(files []string, flag string, globs []string) error {
	for _, g := range globs {
		if _, err := filepath.Match(strings.TrimPrefix(g, "!"), ""); err != nil {
			return fmt.Errorf("%s %q: %w", flag, g, err)
		}
	}
	for _, f := range files {
		if matches(f, globs) {
			return nil
		}
	}
	return fmt.Errorf("%s %q: matches none of the package's files", flag, strings.Join(globs, ","))
}

// matches reports whether file's base name matches one of globs and none of the globs
// that start with "!" (without it: "*,!store.go" is every file but store.go).
func matches(file string, globs []string) bool {
	base := filepath.Base(file)
	in := false
	for _, g := range globs {
		if neg, ok := strings.CutPrefix(g, "!"); ok {
			if m, _ := filepath.Match(neg, base); m {
				return false
			}
		} else if m, _ := filepath.Match(g, base); m {
			in = true
		}
	}
	return in
}

// Ref is one object used from a -from file and declared in a -to file.
type Ref struct {
	Name string // "name"; "Type.name" for a method or a field of a named struct type
	File string // the declaring file's base name
}

// fileDeps type-checks the package in dir (its non-test files) and returns, sorted by
// file and name, each distinct object of the package that a file matching from uses and
// a file matching to declares. A file matching both is counted as neither.
func fileDeps(dir string, from, to []string) ([]Ref, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bp, err := build.ImportDir(abs, 0)
	if err != nil {
		return nil, err
	}
	if err := checkGlobs(bp.GoFiles, "-from", from); err != nil {
		return nil, err
	}
	if err := checkGlobs(bp.GoFiles, "-to", to); err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(abs, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check(bp.ImportPath, fset, files, info)
	if err != nil {
		return nil, err
	}
	isFrom := func(name string) bool { return matches(name, from) && !matches(name, to) }
	isTo := func(name string) bool { return matches(name, to) && !matches(name, from) }
	fields := fieldNames(pkg)
	seen := map[types.Object]bool{}
	var out []Ref
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || seen[obj] || !isFrom(fset.PositionFor(id.Pos(), false).Filename) {
			continue
		}
		declared := fset.PositionFor(obj.Pos(), false).Filename
		if !isTo(declared) {
			continue
		}
		seen[obj] = true
		name := objName(obj)
		if f, ok := fields[obj]; ok {
			name = f
		}
		out = append(out, Ref{Name: name, File: filepath.Base(declared)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// objName is obj's name, with its receiver's type for a method ("Store.Load").
func objName(obj types.Object) string {
	if f, ok := obj.(*types.Func); ok {
		if recv := f.Signature().Recv(); recv != nil {
			t := recv.Type()
			if p, ok := t.(*types.Pointer); ok {
				t = p.Elem()
			}
			if n, ok := t.(*types.Named); ok {
				return n.Obj().Name() + "." + f.Name()
			}
		}
	}
	return obj.Name()
}

// fieldNames names the fields of pkg's named struct types "Type.Field".
func fieldNames(pkg *types.Package) map[types.Object]string {
	out := map[types.Object]string{}
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		st, ok := tn.Type().Underlying().(*types.Struct)
		if !ok {
			continue
		}
		for f := range st.Fields() {
			out[f] = name + "." + f.Name()
		}
	}
	return out
}
