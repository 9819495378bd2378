package main

import (
	"os"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/proxy"
	"github.com/spf13/cobra"
)

// newProxyCheckCmd is `habench proxy-check CONFIG`, hidden: the health-check server a
// sandbox's proxy asks (package proxy's Serve), started by package cluster in the
// proxy's namespace with the JSON config it wrote into the proxy's directory. It ends
// on SIGINT/SIGTERM, or by itself once CONFIG is gone (the cluster destroyed).
func newProxyCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "proxy-check CONFIG",
		Short:  "Serve a sandbox proxy's health checks (started by habench)",
		Hidden: true,
		Args:   exactArgs(1, "CONFIG"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return proxy.Serve(cmd.Context(), args[0])
		},
	}
}

// setHabenchBinary tells package cluster this habench binary, which it starts as the
// proxy's health-check server (cluster.HabenchBinary).
func setHabenchBinary() {
	if exe, err := os.Executable(); err == nil && cluster.HabenchBinary == "" {
		cluster.HabenchBinary = exe
	}
}
