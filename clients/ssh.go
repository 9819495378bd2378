package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/host"
)

// SSHRunner runs each client's `habench client-run` on its host over SSH (OpenSSH, one
// session over the host's master connection): the job goes to the session's standard
// input, the stream comes back on its standard output. Ending the session (Kill, or the
// coordinator's death: its ssh client's standard input ends) ends the remote session's
// standard input, on which the client ends its run by itself.
type SSHRunner struct {
	// Host returns the SSH access to a client (its name, an ssh destination), with the
	// ssh options of the run (cluster's helpers make them from an ssh: section).
	Host func(client string) *host.SSH
	// Bin is habench's path on the client hosts: the copy the coordinator made there, or
	// "habench" for one on their PATH.
	Bin string
	// Bins are clients' own paths (a copy in a directory made for the run on each host),
	// in place of Bin; a client not in it runs Bin.
	Bins map[string]string
}

// bin is client's habench path on its host.
func (r SSHRunner) bin(client string) string {
	if b, ok := r.Bins[client]; ok {
		return b
	}
	return r.Bin
}

// Check runs `Bin version` on client's host and returns an error in one line, naming the
// client, when its host cannot be reached or its habench is not version (the
// coordinator's): a refusal before anything starts.
func (r SSHRunner) Check(ctx context.Context, client, version string) error {
	bin := r.bin(client)
	out, err := r.Host(client).Run(ctx, bin, "version")
	if err != nil {
		return fmt.Errorf("client %s: %s version: %v", client, bin, oneLine(err.Error()))
	}
	if got := strings.TrimPrefix(strings.TrimSpace(string(out)), "habench "); got != version {
		return fmt.Errorf("client %s: %s is habench %q, the coordinator's is %q", client, bin, got, version)
	}
	return nil
}

// Start connects to client's host (the master connection) and starts Bin client-run
// there. The session ends when its standard input is closed and the client is done, or by
// Kill; ctx only bounds the connection.
func (r SSHRunner) Start(ctx context.Context, client string) (*Proc, error) {
	h, bin := r.Host(client), r.bin(client)
	if err := h.Connect(ctx); err != nil {
		return nil, fmt.Errorf("client %s: %w", client, err)
	}
	// Standard input is an OS pipe, given to ssh as is: with an io.Pipe, os/exec's Wait
	// would wait for its copying goroutine, blocked in Read until the coordinator closes
	// it, long after the session ended (a client killed on its host).
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", client, err)
	}
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = h.Stream(sctx, inR, outW, bin, "client-run")
		outW.Close()
		inR.Close()
	}()
	var once sync.Once
	return &Proc{Stdin: inW, Stdout: outR,
		Kill: func() {
			once.Do(func() {
				// The stream first: the client learns of the end from its standard input,
				// and what it sends after that (its result, on a loaded machine before the
				// next statement here ran) must not be read as its own end (TestSSHClients
				// failed so in CI-like run BASE).
				outR.CloseWithError(errKilled) // the reader returns at once, whatever ssh does
				inW.Close()
				cancel()
			})
		},
		Wait: func() error {
			select {
			case <-done:
			case <-time.After(sessionWait):
				cancel()
				return fmt.Errorf("client %s: its ssh session had not ended %v after its stream", client, sessionWait)
			}
			cancel()
			if runErr != nil {
				return fmt.Errorf("client %s: %s client-run: %s", client, bin, oneLine(runErr.Error()))
			}
			return nil
		}}, nil
}

// errKilled is the stream's error after Kill.
var errKilled = errors.New("its session was ended")

// sessionWait bounds Wait: how long an SSH session may take to end after its stream.
const sessionWait = 5 * time.Second

// oneLine is s with its line breaks as " | ".
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
}
