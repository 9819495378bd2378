package clients

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/habench/habench/workload"
)

// ErrCoordinatorGone is the cause of a client's run's end when its standard input ended
// (the coordinator, or its SSH connection, is gone) or its stream broke.
var ErrCoordinatorGone = errors.New("the coordinator is gone")

// maxJob is the longest job line a client reads (bytes).
const maxJob = 1 << 20

// Serve is a client's side of a run (`habench client-run`): it reads one Job from in (a
// line of JSON), waits for the job's Start, runs the job's workload with an Encoder on out
// as its Reporter, and ends with the end record (the Result, the run's error, or both).
// The run ends early, its partial Result sent, when ctx ends, when in reaches its end or
// fails (the coordinator is gone: ErrCoordinatorGone), or when the stream breaks (then
// nothing more can be sent). version is this habench's version, which the hello carries.
// When the job has a RemoveDir, the client removes it (its own copy: RemoveOwnDir) before
// it returns, whatever ended the run. It returns the run's error or the stream's; a job that cannot be read or is invalid is
// an error too, sent in an end record after the hello when the job names its client.
func Serve(ctx context.Context, in io.Reader, out io.Writer, version string) error {
	br := bufio.NewReaderSize(in, 64<<10)
	line, err := readLine(br)
	if err != nil {
		return fmt.Errorf("client: reading the job: %w", err)
	}
	var job Job
	if err := json.Unmarshal(line, &job); err != nil {
		return fmt.Errorf("client: the job: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { // the coordinator keeps in open while it wants the run
		if _, err := io.Copy(io.Discard, br); err != nil {
			cancel(fmt.Errorf("%w: reading standard input: %v", ErrCoordinatorGone, err))
		}
		cancel(fmt.Errorf("%w: standard input ended", ErrCoordinatorGone))
	}()
	defer func() {
		if err := RemoveOwnDir(job.RemoveDir); err != nil {
			fmt.Fprintf(os.Stderr, "client %s: %v\n", job.Client, err)
		}
	}()
	if job.Client == "" {
		return fmt.Errorf("client: job: no client name")
	}
	checkErr := job.Check()
	if checkErr == nil {
		select {
		case <-time.After(time.Until(job.Start)):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	o := job.Options
	e, err := NewEncoder(out, Hello{Version: version, Client: job.Client, Threads: o.Threads, Start: time.Now(),
		Workload: job.Workload, Percentile: o.Percentile, ExtraPercentiles: o.ExtraPercentiles})
	if err != nil {
		return err
	}
	if checkErr != nil {
		if err := e.Result(nil, checkErr); err != nil {
			return err
		}
		return checkErr
	}
	go func() {
		select {
		case <-e.Broken():
			cancel(fmt.Errorf("%w: %v", ErrCoordinatorGone, e.Err()))
		case <-ctx.Done():
		}
	}()
	w, _ := workload.Lookup(job.Workload) // Check looked it up
	res, runErr := w.Run(ctx, job.Target(), o, e)
	if cause := context.Cause(ctx); runErr != nil && cause != nil {
		runErr = fmt.Errorf("%w (%v)", runErr, cause)
	}
	if err := e.Result(res, runErr); err != nil {
		return err
	}
	return runErr
}

// readLine reads one line of at most maxJob bytes, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, isPrefix, err := br.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, part...)
		if len(line) > maxJob {
			return nil, fmt.Errorf("a line longer than %d bytes", maxJob)
		}
		if !isPrefix {
			return line, nil
		}
	}
}
