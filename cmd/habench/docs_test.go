package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"go.yaml.in/yaml/v3"
)

// The tests in this file keep README.md and docs/*.md true without running anything: every
// habench command line in a shell block parses against the real command tree, every YAML
// block is a topology or scenario file habench accepts (or is marked "# fragment"), every
// JSON block that is a whole document is valid JSON, and every link and repository path
// they mention exists.

// repoRoot is the checkout's top directory (this package is cmd/habench).
const repoRoot = "../.."

// docFile is one Markdown file, its path relative to the repository root.
type docFile struct {
	path string
	text string
}

func docFiles(t *testing.T) []docFile {
	t.Helper()
	paths := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, rel)
	}
	var files []docFile
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, docFile{path: p, text: string(b)})
	}
	return files
}

// codeBlock is a fenced block: its info string's first word and its lines.
type codeBlock struct {
	lang  string
	line  int // the line of the opening fence, 1-based
	lines []string
}

func codeBlocks(text string) []codeBlock {
	var blocks []codeBlock
	var cur *codeBlock
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") {
				lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), " ")
				cur = &codeBlock{lang: strings.ToLower(lang), line: n}
			}
			continue
		}
		if trimmed == "```" {
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	return blocks
}

// shellWords splits one shell line into commands (at unquoted |, ||, &&, ; and &) of
// words, dropping comments and redirections, the way a reader would type it. Unquoted
// [ and ] around a word (the docs' optional parts) and "..." words are dropped.
func shellWords(line string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	end := func() {
		if inWord {
			s := w.String()
			if !quoted {
				s = strings.TrimLeft(s, "[")
				s = strings.TrimRight(s, "]")
			}
			if s != "..." && (s != "" || quoted) {
				words = append(words, s)
			}
		}
		w.Reset()
		inWord, quoted = false, false
	}
	endCmd := func() {
		end()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	r := []rune(line)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\'':
			j := i + 1
			for j < len(r) && r[j] != '\'' {
				j++
			}
			if j == len(r) {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			w.WriteString(string(r[i+1 : j]))
			inWord, quoted = true, true
			i = j
		case c == '"':
			j := i + 1
			for ; j < len(r) && r[j] != '"'; j++ {
				if r[j] == '\\' && j+1 < len(r) {
					j++
				}
				w.WriteRune(r[j])
			}
			if j == len(r) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord, quoted = true, true
			i = j
		case c == '\\' && i+1 < len(r):
			i++
			w.WriteRune(r[i])
			inWord = true
		case c == '#' && !inWord:
			endCmd()
			return cmds, nil
		case c == '|' || c == ';' || c == '&':
			endCmd()
			if i+1 < len(r) && (r[i+1] == '|' || r[i+1] == '&') {
				i++
			}
		case c == '>' || c == '<':
			// A redirection: drop its target (and a 2> or &> prefix already in the word).
			if inWord && (w.String() == "2" || w.String() == "1") {
				w.Reset()
				inWord = false
			}
			end()
			j := i + 1
			for j < len(r) && (r[j] == '>' || r[j] == '&') {
				j++
			}
			for j < len(r) && r[j] == ' ' {
				j++
			}
			for j < len(r) && r[j] != ' ' {
				j++
			}
			i = j
		case unicode.IsSpace(c):
			end()
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	endCmd()
	return cmds, nil
}

var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// habenchArgs returns the arguments after habench when the command is a habench call
// (habench, ./bin/habench or bin/habench, after any VAR=value assignments or sudo).
func habenchArgs(words []string) ([]string, bool) {
	for len(words) > 0 && (envAssign.MatchString(words[0]) || words[0] == "sudo") {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, false
	}
	switch words[0] {
	case "habench", "./bin/habench", "bin/habench":
		return words[1:], true
	}
	return nil, false
}

// checkCommandLine parses args as habench would, against the real command tree, without
// running anything: a known subcommand, known flags with values of the right type, and the
// number of arguments the command takes.
func checkCommandLine(args []string) error {
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	c.InitDefaultHelpFlag()
	if err := c.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	if h, _ := c.Flags().GetBool("help"); h {
		return nil
	}
	if !c.Runnable() {
		return fmt.Errorf("%s: not a runnable command (a group of subcommands)", c.CommandPath())
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	return nil
}

func isShell(lang string) bool {
	switch lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// shellLines joins continued lines and strips console prompts.
func shellLines(b codeBlock) []struct {
	n    int
	text string
} {
	var out []struct {
		n    int
		text string
	}
	var acc strings.Builder
	start := 0
	for i, l := range b.lines {
		if b.lang == "console" {
			if !strings.HasPrefix(l, "$ ") && acc.Len() == 0 {
				continue // output, not a command
			}
			l = strings.TrimPrefix(l, "$ ")
		}
		if acc.Len() == 0 {
			start = b.line + 1 + i
		}
		if strings.HasSuffix(l, "\\") {
			acc.WriteString(strings.TrimSuffix(l, "\\"))
			acc.WriteString(" ")
			continue
		}
		acc.WriteString(l)
		out = append(out, struct {
			n    int
			text string
		}{start, acc.String()})
		acc.Reset()
	}
	return out
}

// TestDocsCommandLines: every habench command in a sh/bash/console block of README.md and
// docs/*.md parses against the command tree (subcommand, flags, argument count).
func TestDocsCommandLines(t *testing.T) {
	checked := 0
	for _, f := range docFiles(t) {
		for _, b := range codeBlocks(f.text) {
			if !isShell(b.lang) {
				continue
			}
			for _, l := range shellLines(b) {
				cmds, err := shellWords(l.text)
				if err != nil {
					t.Errorf("%s:%d: %v", f.path, l.n, err)
					continue
				}
				for _, words := range cmds {
					args, ok := habenchArgs(words)
					if !ok {
						continue
					}
					checked++
					if err := checkCommandLine(args); err != nil {
						t.Errorf("%s:%d: %s\n\t%v", f.path, l.n, strings.TrimSpace(l.text), err)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d habench command lines found in the docs' shell blocks; the extraction is broken", checked)
	}
}

// TestDocsYAML: every yaml block is a scenario (it has topologies:) that ParseScenario
// accepts, or a topology file that habench deploy -f / register -f accepts
// (ParseSpecYAML, then Validate), unless a comment line in it says "# fragment".
func TestDocsYAML(t *testing.T) {
	checked := 0
	for _, f := range docFiles(t) {
		for _, b := range codeBlocks(f.text) {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			src := strings.Join(b.lines, "\n") + "\n"
			if fragment(b.lines) {
				// Still YAML.
				var v any
				if err := yaml.Unmarshal([]byte(src), &v); err != nil {
					t.Errorf("%s:%d: a fragment that is not YAML: %v", f.path, b.line, err)
				}
				continue
			}
			checked++
			var top map[string]any
			if err := yaml.Unmarshal([]byte(src), &top); err != nil {
				t.Errorf("%s:%d: not a YAML mapping: %v", f.path, b.line, err)
				continue
			}
			switch {
			case top["topologies"] != nil:
				if _, err := scenario.ParseScenario([]byte(src)); err != nil {
					t.Errorf("%s:%d: scenario: %v", f.path, b.line, err)
				}
			case top["kind"] != nil || top["provider"] != nil:
				s, err := topology.ParseSpecYAML([]byte(src))
				if err == nil {
					err = s.Validate()
				}
				if err != nil {
					t.Errorf("%s:%d: topology: %v", f.path, b.line, err)
				}
			default:
				t.Errorf("%s:%d: a yaml block that is neither a scenario (topologies:) nor a topology (kind: or provider:); mark it with a \"# fragment\" comment line if it is part of one", f.path, b.line)
			}
		}
	}
	if checked < 4 {
		t.Errorf("only %d whole YAML files found in the docs; the extraction is broken", checked)
	}
}

func fragment(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# fragment") {
			return true
		}
	}
	return false
}

// Minimum counts of what the docs tests check (about 80% of what the docs held when they
// were set: 1 whole JSON document, 77 relative links, 41 of them with an anchor, 26
// repository paths): a parser that stops finding blocks or links checks nothing and passes.
const (
	minDocsJSON     = 1
	minDocsLinks    = 60
	minDocsAnchors  = 32
	minDocsRepoPath = 20
)

// atLeast fails t when fewer than min things were checked, and logs the count.
func atLeast(t *testing.T, what string, n, min int) {
	t.Helper()
	if n < min {
		t.Errorf("%d %s, want at least %d: does the test still find them in the docs?", n, what, min)
	} else {
		t.Logf("%d %s", n, what)
	}
}

// TestDocsJSON: a json block that starts with { or [ is a whole document and must be valid.
func TestDocsJSON(t *testing.T) {
	checked := 0
	defer func() { atLeast(t, "whole JSON documents checked", checked, minDocsJSON) }()
	for _, f := range docFiles(t) {
		for _, b := range codeBlocks(f.text) {
			if b.lang != "json" {
				continue
			}
			src := strings.TrimSpace(strings.Join(b.lines, "\n"))
			if !strings.HasPrefix(src, "{") && !strings.HasPrefix(src, "[") {
				continue // an excerpt ("knobs": {...}), said so in the text
			}
			checked++
			if !json.Valid([]byte(src)) {
				var v any
				err := json.Unmarshal([]byte(src), &v)
				t.Errorf("%s:%d: invalid JSON: %v", f.path, b.line, err)
			}
		}
	}
}

var (
	mdLink = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)\)`)
	// Repository paths in code spans: `docs/cli.md`, `scenarios/quick.yaml`, `grafana/...`.
	repoPath = regexp.MustCompile("`((?:docs|scenarios|grafana|scripts|\\.ci)/[A-Za-z0-9_.\\-/]*[A-Za-z0-9_\\-/])`")
)

// anchors returns the GitHub heading anchors of a Markdown text.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var s strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				s.WriteRune(r)
			case r == ' ':
				s.WriteRune('-')
			}
		}
		a := s.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinks: every relative Markdown link in README.md and docs/*.md points to a file of
// the repository (and to a heading of it, with #anchor), and every repository path in a
// code span (`docs/...`, `scenarios/...`, `grafana/...`, `scripts/...`) exists.
func TestDocsLinks(t *testing.T) {
	links, anchored, paths := 0, 0, 0
	defer func() {
		atLeast(t, "relative links checked", links, minDocsLinks)
		atLeast(t, "anchors checked", anchored, minDocsAnchors)
		atLeast(t, "repository paths in code spans checked", paths, minDocsRepoPath)
	}()
	texts := map[string]string{}
	files := docFiles(t)
	for _, f := range files {
		texts[f.path] = f.text
	}
	for _, f := range files {
		for _, m := range mdLink.FindAllStringSubmatch(f.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			p, anchor, _ := strings.Cut(target, "#")
			file := f.path
			if p != "" {
				file = filepath.Clean(filepath.Join(filepath.Dir(f.path), p))
				if strings.HasPrefix(file, "..") {
					t.Errorf("%s: link %q leaves the repository", f.path, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, file)); err != nil {
					t.Errorf("%s: link %q: no such file %s", f.path, target, file)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			text, ok := texts[file]
			if !ok {
				b, err := os.ReadFile(filepath.Join(repoRoot, file))
				if err != nil {
					t.Errorf("%s: link %q: %v", f.path, target, err)
					continue
				}
				text = string(b)
			}
			anchored++
			if !anchors(text)[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", f.path, target, file, anchor)
			}
		}
		for _, m := range repoPath.FindAllStringSubmatch(f.text, -1) {
			paths++
			if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
				t.Errorf("%s: `%s`: no such file or directory in the repository", f.path, m[1])
			}
		}
	}
}

// TestDocsCIRunsREADMETestCommand: .ci/run's last command is one of the README's
// two commands, so CI runs exactly what the README tells a newcomer to run.
func TestDocsCIRunsREADMETestCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			last = l
		}
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, blk := range codeBlocks(string(readme)) {
		if !isShell(blk.lang) {
			continue
		}
		for _, l := range shellLines(blk) {
			cmds, _ := shellWords(l.text)
			for _, c := range cmds {
				if strings.Join(c, " ") == last {
					return
				}
			}
		}
	}
	t.Errorf(".ci/run runs %q, which no shell block of README.md gives", last)
}

// TestDocsShellWords checks the splitter the docs tests rely on.
func TestDocsShellWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{`habench run scenarios/quick.yaml --dry-run   # the plan only`, `[[habench run scenarios/quick.yaml --dry-run]]`},
		{`habench netem apply --cluster t1 --groups "dc1: [n1,n2]; intra 0.1ms"`, `[[habench netem apply --cluster t1 --groups dc1: [n1,n2]; intra 0.1ms]]`},
		{`habench report results/DIR [--baseline NAME]`, `[[habench report results/DIR --baseline NAME]]`},
		{`bin/habench destroy --all >/dev/null 2>&1 || true`, `[[bin/habench destroy --all] [true]]`},
		{`habench register --name ex1 --dsn 'u:p@tcp(127.0.0.1:3306)/' ...`, `[[habench register --name ex1 --dsn u:p@tcp(127.0.0.1:3306)/]]`},
	} {
		got, err := shellWords(c.in)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("shellWords(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	if err := checkCommandLine([]string{"deploy", "--name", "t1", "--no-such-flag"}); err == nil {
		t.Error("an unknown flag parsed")
	}
	if err := checkCommandLine([]string{"nosuchcommand"}); err == nil {
		t.Error("an unknown command parsed")
	}
	if err := checkCommandLine([]string{"deploy", "--nodes", "three"}); err == nil {
		t.Error("a flag value of the wrong type parsed")
	}
}
