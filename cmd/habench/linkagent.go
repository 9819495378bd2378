package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/habench/habench/netem"
)

// newLinkAgentCmd is the link agent habench starts over SSH on a user's host whose
// kernel lacks sch_netem (netem.RunAgent): configuration lines on stdin, one answer per
// line on stdout; it removes its TUN device and routes and exits when stdin ends. Not
// for direct use.
func newLinkAgentCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "link-agent",
		Short:  "The userspace link agent on a host (started by habench over SSH)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return netem.RunAgent(os.Stdin, os.Stdout)
		},
	}
}
