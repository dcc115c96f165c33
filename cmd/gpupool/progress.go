package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress prints a status line: redrawn in place on a terminal, one line every few
// seconds otherwise (CI logs, pipes).
type progress struct {
	w        io.Writer
	tty      bool
	every    time.Duration
	last     time.Time
	lastLine int
}

func newProgress(f *os.File) *progress {
	tty := term.IsTerminal(int(f.Fd()))
	every := 5 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	return &progress{w: f, tty: tty, every: every}
}

// update prints line if enough time has passed (or force).
func (p *progress) update(line string, force bool) {
	if !force && time.Since(p.last) < p.every {
		return
	}
	p.last = time.Now()
	if p.tty {
		pad := ""
		if n := p.lastLine - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
		p.lastLine = len(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends the in-place line.
func (p *progress) done() {
	if p.tty && p.lastLine > 0 {
		fmt.Fprintln(p.w)
		p.lastLine = 0
	}
}

// bar draws a fraction as a 20-cell bar.
func bar(frac float64) string {
	frac = min(max(frac, 0), 1)
	n := int(frac * 20)
	return "[" + strings.Repeat("█", n) + strings.Repeat("░", 20-n) + "]"
}
