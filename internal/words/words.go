// Package words holds the English that several of habench's outputs share (the dry run,
// reports, the sweep's messages), so that a package that only writes a sentence needs no
// import of the package that renders reports.
package words

import (
	"fmt"
	"strings"
)

// Plural renders a count with its noun: "1 node", "3 nodes", "2 topologies" (a final y
// after a consonant becomes "ies"; "keys", "replays" keep theirs).
func Plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	if strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ay") && !strings.HasSuffix(word, "ey") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}
