package main

import (
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
