package topology

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxInputFile is the largest scenario or topology file habench reads (files are a few KB;
// a bigger one is not one of them).
const MaxInputFile = 1 << 20

// TextError is a YAML file's byte that is not text: Line (1-based), Field the enclosing
// key's path ("workload.name", "topologies[1].flavor"; "" outside any key, e.g. in a
// comment), Byte the first bad byte, More how many other bytes are bad.
type TextError struct {
	Line  int
	Field string
	Byte  byte
	What  string // "invalid UTF-8 byte", "control byte"
	More  int
}

func (e *TextError) Error() string {
	s := fmt.Sprintf("line %d: ", e.Line)
	if e.Field != "" {
		s += "field " + e.Field + ": "
	}
	s += fmt.Sprintf("%s 0x%02x", e.What, e.Byte)
	if e.More > 0 {
		s += fmt.Sprintf(" (and %d more bytes that are not text: not a YAML file?)", e.More)
	}
	return s
}

// CheckText refuses a file that is not text before it is decoded as YAML: a byte that does
// not decode as UTF-8, or a control byte other than tab, newline and carriage return.
// Errors are *TextError naming the first such byte's line and enclosing key (the YAML
// library names neither) and counting the others. nil for text.
func CheckText(b []byte) error {
	first, more := -1, 0
	var what string
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		bad := ""
		switch {
		case r == utf8.RuneError && n == 1:
			bad = "invalid UTF-8 byte"
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f:
			bad = "control byte"
		}
		if bad != "" {
			if first < 0 {
				first, what = i, bad
			} else {
				more++
			}
		}
		i += n
	}
	if first < 0 {
		return nil
	}
	return &TextError{Line: bytes.Count(b[:first], []byte("\n")) + 1, Field: yamlPathAt(b, first), Byte: b[first], What: what, More: more}
}

// blockKeyRE is a block mapping key at the start of a line's content: `name:` or `"n2:x":`.
var blockKeyRE = regexp.MustCompile(`^("[^"]*"|'[^']*'|[^\s:#{}\[\],'"][^:#{}\[\],]*?)\s*:(\s|$)`)

// yamlPathAt finds the key path enclosing byte off of a YAML document by indentation
// (block mappings and sequences) and, on off's own line, flow collections ({a: 1, b: [x]}).
// Good enough for the files habench reads; "" when off is in a comment or outside keys.
func yamlPathAt(b []byte, off int) string {
	var stack []pathLevel
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	lines := strings.Split(string(b[:start]), "\n")
	lines = append(lines[:len(lines)-1], string(b[start:off]))
	for li, l := range lines {
		last := li == len(lines)-1
		content := strings.TrimLeft(l, " ")
		indent := len(l) - len(content)
		if content == "" || strings.HasPrefix(content, "#") || strings.HasPrefix(content, "---") {
			if last && strings.HasPrefix(content, "#") {
				return ""
			}
			continue
		}
		for strings.HasPrefix(content, "- ") || content == "-" {
			// A sequence item of the innermost key indented less.
			for len(stack) > 0 && stack[len(stack)-1].indent > indent {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && stack[len(stack)-1].indent <= indent {
				top := &stack[len(stack)-1]
				if top.indent < indent || top.index >= 0 {
					top.index++
				} else {
					top.index = 0
				}
			}
			content = strings.TrimPrefix(strings.TrimPrefix(content, "-"), " ")
			indent += 2
		}
		m := blockKeyRE.FindStringSubmatchIndex(content)
		if m == nil {
			if last {
				return renderPath(stack) + flowPath(content)
			}
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		key := strings.Trim(content[m[2]:m[3]], `"'`)
		stack = append(stack, pathLevel{indent: indent, key: key, index: -1})
		if last {
			rest := content[m[1]:]
			return renderPath(stack) + flowPath(rest)
		}
	}
	return ""
}

// pathLevel is a block mapping key on the way to a byte, with its indentation and the
// sequence item under it (-1: none).
type pathLevel struct {
	indent int
	key    string
	index  int
}

// renderPath joins keys with "." and sequence indexes as [i].
func renderPath(stack []pathLevel) string {
	var sb strings.Builder
	for i, l := range stack {
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(l.key)
		if l.index >= 0 {
			sb.WriteString("[" + strconv.Itoa(l.index) + "]")
		}
	}
	return sb.String()
}

// flowPath is the path inside a flow collection up to the end of s, the text after a
// block key on one line: "[{name: x, kind: y" is "[0].kind". Quoted text is skipped.
func flowPath(s string) string {
	type level struct {
		seq   bool
		key   string
		index int
	}
	var stack []level
	tok := strings.Builder{}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\'':
			if j := strings.IndexByte(s[i+1:], c); j >= 0 {
				tok.WriteString(s[i+1 : i+1+j])
				i += j + 1
				continue
			}
		case '[', '{':
			stack = append(stack, level{seq: c == '[', index: 0})
			tok.Reset()
			continue
		case ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			tok.Reset()
			continue
		case ',':
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				if top.seq {
					top.index++
				} else {
					top.key = ""
				}
			}
			tok.Reset()
			continue
		case ':':
			if len(stack) > 0 && !stack[len(stack)-1].seq {
				stack[len(stack)-1].key = strings.TrimSpace(tok.String())
				tok.Reset()
				continue
			}
		}
		tok.WriteByte(c)
	}
	var sb strings.Builder
	for _, l := range stack {
		switch {
		case l.seq:
			sb.WriteString("[" + strconv.Itoa(l.index) + "]")
		case l.key != "":
			sb.WriteString("." + l.key)
		}
	}
	return sb.String()
}
