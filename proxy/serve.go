package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// ReadCheckConfig reads a CheckConfig from the JSON file at path. Error: the file cannot
// be read or is not a config with nodes and a listen address.
func ReadCheckConfig(path string) (CheckConfig, error) {
	var cfg CheckConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("proxy check config %s: %w", path, err)
	}
	if len(cfg.Nodes) == 0 || cfg.Listen == "" {
		return cfg, fmt.Errorf("proxy check config %s: want nodes and a listen address", path)
	}
	return cfg, nil
}

// ConfigPoll is how often Serve looks whether its config file is still there.
const ConfigPoll = time.Second

// Serve serves a Checker for the config file at path on its Listen address until ctx
// ends or the file is removed (looked at every ConfigPoll): a destroyed cluster takes
// its directory, and with it the file, so a check server never outlives its cluster.
// Error: the file cannot be read, the address not listened on, the server fails.
func Serve(ctx context.Context, path string) error {
	cfg, err := ReadCheckConfig(path)
	if err != nil {
		return err
	}
	ck, err := NewChecker(cfg)
	if err != nil {
		return err
	}
	defer ck.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("proxy check server: %w", err)
	}
	srv := &http.Server{Handler: ck, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tick := time.NewTicker(ConfigPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			srv.Close()
			return nil
		case <-tick.C:
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				srv.Close()
				return nil
			}
		}
	}
}
