package main

import (
	"os"

	"github.com/habench/habench/clients"
	"github.com/spf13/cobra"
)

// newClientRunCmd is `habench client-run`, hidden: one client of a run driven from
// several client machines (package clients' Serve). The coordinator starts it (over SSH
// on a client host), sends its job on standard input and reads its stream on standard
// output; it ends its run, sending what it measured, when standard input ends.
func newClientRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "client-run",
		Short:  "Run one client's share of a multi-client run (started by habench)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return clients.Serve(cmd.Context(), os.Stdin, os.Stdout, version)
		},
	}
}
