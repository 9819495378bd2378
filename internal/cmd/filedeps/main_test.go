package main

import (
	"slices"
	"testing"
)

// TestFileDeps: the objects of testdata/fixture that its a_* files use and its b_* files
// declare (a method and a field named with their type; nothing from a test file or a
// file excluded by its build constraint, nothing a neutral file uses), with "!" globs
// excluding files, and a file that matches both sides counting as neither.
func TestFileDeps(t *testing.T) {
	for _, tc := range []struct {
		from, to []string
		want     []Ref
	}{
		{[]string{"a_*"}, []string{"b_*"}, []Ref{
			{"Helper", "b_decl.go"}, {"K", "b_decl.go"}, {"Local", "b_decl.go"}, {"T", "b_decl.go"},
			{"T.F", "b_decl.go"}, {"T.M", "b_decl.go"}, {"V", "b_decl.go"},
		}},
		{[]string{"a_*", "!a_two.go"}, []string{"b_*"}, []Ref{
			{"Helper", "b_decl.go"}, {"K", "b_decl.go"}, {"T", "b_decl.go"},
			{"T.F", "b_decl.go"}, {"T.M", "b_decl.go"}, {"V", "b_decl.go"},
		}},
		{[]string{"c_*"}, []string{"b_*"}, []Ref{{"Helper", "b_decl.go"}, {"V", "b_decl.go"}}},
		{[]string{"*"}, []string{"b_*"}, nil},
		{[]string{"b_*"}, []string{"a_*", "c_*"}, nil},
	} {
		got, err := fileDeps("testdata/fixture", tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("from %q to %q: got %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestFileDepsBadPackage: a package that does not type-check, or no package, is an
// error, not a count.
func TestFileDepsBadPackage(t *testing.T) {
	for _, dir := range []string{"testdata/broken", "testdata/nosuchdir"} {
		if refs, err := fileDeps(dir, []string{"*"}, []string{"*"}); err == nil {
			t.Errorf("%s: no error (%v)", dir, refs)
		}
	}
}

// TestFileDepsBadGlobs: a malformed glob, or globs that match no file of the package (a
// typo, a renamed file), are an error, not a count of 0.
func TestFileDepsBadGlobs(t *testing.T) {
	for _, tc := range []struct{ from, to []string }{
		{[]string{"a_*"}, []string{"bb_*"}},
		{[]string{"x_*", "!a_*"}, []string{"b_*"}},
		{[]string{"a_["}, []string{"b_*"}},
		{[]string{"a_*"}, []string{"b_*", "!["}},
	} {
		if refs, err := fileDeps("testdata/fixture", tc.from, tc.to); err == nil {
			t.Errorf("from %q to %q: no error (%v)", tc.from, tc.to, refs)
		}
	}
}
