package main

import (
	"fmt"
	"io"
	"os"

	"github.com/habench/habench/topology"
)

// readInputFile reads a scenario or topology file (what: "scenario", "topology") of at most
// topology.MaxInputFile bytes; a bigger file is refused without reading it: "30.0 MB: not a
// scenario file (the limit is 1 MiB)". Errors: the file cannot be opened or read, too big.
func readInputFile(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooBig := func(size string) error {
		return fmt.Errorf("%s: not a %s file (the limit is %d MiB)", size, what, topology.MaxInputFile>>20)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > topology.MaxInputFile {
		return nil, tooBig(fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6))
	}
	// Not a regular file (a pipe, a device): read one byte past the limit at most.
	b, err := io.ReadAll(io.LimitReader(f, topology.MaxInputFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > topology.MaxInputFile {
		return nil, tooBig("over 1 MiB")
	}
	return b, nil
}
