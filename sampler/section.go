package sampler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/schema"
)

// SummaryInput is what a sampler's summary section is computed from: the run's nodes in
// order, its samples in the measured window (warm-up excluded) and the sample interval.
type SummaryInput struct {
	Nodes   []Node
	Samples []Sample
	Every   time.Duration
}

// Section is implemented by a sampler that contributes a section to summary.json and
// to report.md: a new sampler with its own section is one file (its Sampler, Section and
// Register call) plus its test. Sections are found on the registered samplers (Register).
type Section interface {
	// Summarize sets the sampler's section of s from in (its field of schema.Summary,
	// or s.SetSection(key, v) for a section results does not declare); it leaves s as
	// it is when in has none of its samples.
	Summarize(in SummaryInput, s *schema.Summary) error
	// Markdown renders the sampler's section of report.md from s: a "## title" and
	// its table ("" when s has no such section).
	Markdown(s *schema.Summary) string
	// SectionOrder places the section in report.md: sections below
	// SectionsAfterKnobs come before the knob settings, the others after them; equal
	// orders keep the samplers' names in order.
	SectionOrder() int
}

// SectionsAfterKnobs is the first Section.SectionOrder rendered after report.md's knob
// settings.
const SectionsAfterKnobs = 100

// sections returns the registered samplers that are a Section, by SectionOrder then name.
func sections() []Section {
	var out []Section
	for _, name := range slices.Sorted(maps.Keys(constructors)) {
		if s, ok := constructors[name]().(Section); ok {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Section) int { return a.SectionOrder() - b.SectionOrder() })
	return out
}

// Summarize sets every registered sampler's summary section of s from in. Error (naming
// the section's sampler) when one cannot be encoded.
func Summarize(in SummaryInput, s *schema.Summary) error {
	for _, sec := range sections() {
		if err := sec.Summarize(in, s); err != nil {
			return fmt.Errorf("summary section of sampler %s: %w", sec.(Sampler).Name(), err)
		}
	}
	return nil
}

// Markdown renders the registered samplers' report.md sections of s whose SectionOrder
// is in [from, to), in order ("" when s has none).
func Markdown(s *schema.Summary, from, to int) string {
	var b strings.Builder
	for _, sec := range sections() {
		if o := sec.SectionOrder(); o >= from && o < to {
			b.WriteString(sec.Markdown(s))
		}
	}
	return b.String()
}

// optText renders *p with format, "n/a" when p is nil (not measured).
func optText(p *float64, format string) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *p)
}
