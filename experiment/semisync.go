package experiment

import "github.com/habench/habench/schema"

// degradedWarnings are the run's warnings for guarantees that did not hold, as its
// summary has them (semi-sync fallen back to async, --rate not met): sweep.md lists them
// with the cells they happened in.
func degradedWarnings(s *schema.Summary) []string {
	var out []string
	if s.SemiSync != nil && s.SemiSync.Warning != "" {
		out = append(out, s.SemiSync.Warning)
	}
	if s.Rate != nil && s.Rate.Warning != "" {
		out = append(out, s.Rate.Warning)
	}
	return out
}
