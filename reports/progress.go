package reports

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress prints the status line of long-running CLI work: redrawn in place on a
// terminal, one line every few seconds otherwise (CI logs, pipes). It is safe for
// concurrent use.
type Progress struct {
	w     io.Writer
	tty   bool
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	lastLine int
}

// NewProgress writes to f: in place every 250 ms when f is a terminal, else a line
// every 5 s.
func NewProgress(f *os.File) *Progress {
	tty := term.IsTerminal(int(f.Fd()))
	every := 5 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	return &Progress{w: f, tty: tty, every: every}
}

// NewProgressLines writes a line to w at most every every (w is not a terminal).
func NewProgressLines(w io.Writer, every time.Duration) *Progress {
	return &Progress{w: w, every: every}
}

// Update prints line if enough time has passed since the last one (or force).
func (p *Progress) Update(line string, force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
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

// Done ends the in-place line, so that what is printed next starts on its own.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.lastLine > 0 {
		fmt.Fprintln(p.w)
		p.lastLine = 0
	}
}

// Bar draws a fraction (clamped to 0..1) as a 20-cell bar.
func Bar(frac float64) string {
	frac = min(max(frac, 0), 1)
	n := int(frac * 20)
	return "[" + strings.Repeat("█", n) + strings.Repeat("░", 20-n) + "]"
}
