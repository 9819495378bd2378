package experiment

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/habench/habench/scenario"
	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Progress is the sweep's progress line on stderr: "cell 3/12 topology=gr1 threads=16
// links=0.6ms  ETA 4m10s". On a terminal (TTY) it is one line rewritten in place every
// second, cleared around whatever the run prints through Wrap; otherwise one line per cell
// start. A nil *Progress prints nothing (--quiet).
type Progress struct {
	W   io.Writer
	TTY bool

	mu    sync.Mutex
	text  string // current line without the ETA
	eta   func() time.Duration
	shown bool
	stop  chan struct{}
	wg    sync.WaitGroup
}

// NewProgress returns a progress line on f (a TTY is detected), or nil when quiet.
func NewProgress(f *os.File, quiet bool) *Progress {
	if quiet || f == nil {
		return nil
	}
	return &Progress{W: f, TTY: IsTerminal(f)}
}

// Cell shows a new cell's line; eta is asked for the remaining time whenever the line is
// drawn.
func (p *Progress) Cell(text string, eta func() time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text, p.eta = text, eta
	if !p.TTY {
		fmt.Fprintln(p.W, p.line())
		return
	}
	p.draw()
	if p.stop == nil {
		stop := make(chan struct{})
		p.stop = stop
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					p.mu.Lock()
					if p.shown {
						p.draw()
					}
					p.mu.Unlock()
				}
			}
		}()
	}
}

func (p *Progress) line() string {
	s := p.text
	if p.eta != nil {
		s += "  ETA " + scenario.FormatDuration(p.eta())
	}
	return s
}

// draw rewrites the line in place (caller holds mu; TTY only).
func (p *Progress) draw() {
	fmt.Fprintf(p.W, "\r\033[K%s", p.line())
	p.shown = true
}

// clear removes the line (caller holds mu).
func (p *Progress) clear() {
	if p.shown {
		fmt.Fprint(p.W, "\r\033[K")
		p.shown = false
	}
}

// Status shows a line on a terminal only (deploying: the cell's own line follows); it
// prints nothing without a TTY, where each cell start gets exactly one line.
func (p *Progress) Status(text string, eta func() time.Duration) {
	if p == nil || !p.TTY {
		return
	}
	p.Cell(text, eta)
}

// Close stops the updates and removes the line.
func (p *Progress) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.clear()
	p.mu.Unlock()
	p.wg.Wait()
}

// Wrap returns a writer for the run's own output: on a TTY it clears the progress line
// before each write and draws it again after a complete line, so both stay readable on
// one terminal. Without a TTY (or quiet) it returns w.
func (p *Progress) Wrap(w io.Writer) io.Writer {
	if p == nil || !p.TTY || w == nil {
		return w
	}
	return progressWriter{p, w}
}

type progressWriter struct {
	p *Progress
	w io.Writer
}

func (pw progressWriter) Write(b []byte) (int, error) {
	p := pw.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	n, err := pw.w.Write(b)
	if p.text != "" && p.stop != nil && bytes.HasSuffix(b, []byte("\n")) {
		p.draw()
	}
	return n, err
}
