// Command testsummary runs `go test -json ...` (the command after --), prints what a plain
// go test prints as the packages end, and then a summary of the run: the failing tests'
// output first, the wall time, each package's time, the slowest tests, every test over a
// limit and the skipped tests with their reasons. It exits with the command's status (1
// when the stream shows a failure the status missed).
//
//	testsummary [-json FILE] [-slowest N] [-over D] -- go test -json ./...
//	testsummary -read FILE        # the summary of a saved stream
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/habench/habench/internal/testsummary"
)

func main() { os.Exit(run()) }

func run() int {
	jsonFile := flag.String("json", "", "also write the test2json stream to `FILE`")
	read := flag.String("read", "", "summarise the saved stream in `FILE` instead of running a command")
	slowest := flag.Int("slowest", 25, "list the `N` slowest top-level tests")
	over := flag.Duration("over", 60*time.Second, "name every test that took at least `D`")
	flag.Parse()
	o := testsummary.Options{Slowest: *slowest, Over: *over}
	if *read != "" {
		f, err := os.Open(*read)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			return 2
		}
		defer f.Close()
		r, err := testsummary.Read(f, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			return 2
		}
		testsummary.Summarize(os.Stdout, r, 0, o)
		return exit(r, nil)
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "testsummary: want a command after --, e.g. -- go test -json ./...")
		return 2
	}
	return runCommand(flag.Args(), *jsonFile, o)
}

func runCommand(argv []string, jsonFile string, o testsummary.Options) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		return 2
	}
	var stream io.Reader = out
	if jsonFile != "" {
		f, err := os.Create(jsonFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: -json %q: %v\n", jsonFile, err)
			return 2
		}
		defer f.Close()
		stream = io.TeeReader(out, f)
	}
	// Ctrl-C reaches go test through the terminal's process group; wait for its end.
	signal.Ignore(syscall.SIGINT)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %s: %v\n", argv[0], err)
		return 2
	}
	r, rerr := testsummary.Read(stream, os.Stdout)
	werr := cmd.Wait()
	testsummary.Summarize(os.Stdout, r, time.Since(start), o)
	if jsonFile != "" {
		fmt.Printf("\nthe whole stream: %s (testsummary -read %s)\n", jsonFile, jsonFile)
	}
	if rerr != nil {
		fmt.Fprintln(os.Stderr, "testsummary: reading the stream:", rerr)
		return 1
	}
	return exit(r, werr)
}

// exit is the command's exit status, or 1 when it said 0 and the stream shows a failure.
func exit(r *testsummary.Run, werr error) int {
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode()
	}
	if werr != nil {
		return 1
	}
	if !r.OK() {
		return 1
	}
	return 0
}
