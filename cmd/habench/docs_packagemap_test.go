package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/habench/habench/"

// packageMapRow matches a row of docs/development.md's package map: its first cell names
// one or more packages in backquotes, its last what they may import.
var packageMapRow = regexp.MustCompile("^\\| (`[^|]+`) \\|[^|]*\\| ([^|]+) \\|$")

// packageMap reads the package map of docs/development.md: each package's allowed imports
// of habench's own packages ("nothing": none; "every package above": those of the rows
// before it).
func packageMap(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## Package map")
	if start < 0 {
		t.Fatal("docs/development.md has no \"## Package map\" section")
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	allowed := map[string][]string{}
	var above []string
	inTable := false
	for _, line := range strings.Split(text[start:], "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the map is the section's first table
			}
			continue
		}
		inTable = true
		m := packageMapRow.FindStringSubmatch(line)
		if m == nil {
			continue // the header and its rule
		}
		var pkgs, may []string
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			pkgs = append(pkgs, q[1])
		}
		for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
			may = append(may, q[1])
		}
		if strings.Contains(m[2], "every package above") {
			may = append(may, above...)
		}
		for _, p := range pkgs {
			allowed[p] = may
		}
		above = append(above, pkgs...)
	}
	if len(allowed) == 0 {
		t.Fatal("docs/development.md: no rows read from the package map")
	}
	return allowed
}

// sourceImports returns, per package directory (relative to the repository root), the
// module's packages its non-test Go files import.
func sourceImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, filepath.Dir(path))
		if out[rel] == nil {
			out[rel] = map[string]bool{}
		}
		for _, im := range f.Imports {
			if p := strings.Trim(im.Path.Value, `"`); strings.HasPrefix(p, modulePath) {
				out[rel][strings.TrimPrefix(p, modulePath)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDocsPackageMap: docs/development.md's package map is the import rule: every package
// of the module has a row, and its non-test files import only the packages the row allows.
func TestDocsPackageMap(t *testing.T) {
	allowed := packageMap(t)
	imports := sourceImports(t)
	for _, dir := range slices.Sorted(maps.Keys(imports)) {
		may, ok := allowed[dir]
		if !ok {
			t.Errorf("package %s has no row in docs/development.md's package map", dir)
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(imports[dir])) {
			if !slices.Contains(may, p) {
				t.Errorf("package %s imports %s, which its row in docs/development.md's package map does not allow (%s)", dir, p, strings.Join(may, ", "))
			}
		}
	}
	for p := range allowed {
		if _, ok := imports[p]; !ok {
			t.Errorf("docs/development.md's package map has a row for %s, which has no Go files", p)
		}
	}
}
