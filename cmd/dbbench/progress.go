package main

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminalFd(f.Fd())
}

// progressLine prints db_bench's "... finished N ops" lines on a terminal.
// Each ends in "\r" so that the next overwrites it; clear blanks the line
// before anything else is printed, so that result lines start at column
// 0. It is only used when stderr is a terminal: redirected (2>&1 into a
// file or pipe) the "\r" would glue the next result line to the progress
// text, and `grep '^readrandom'` would miss it. Benchmark threads share
// one progressLine; a nil *progressLine prints nothing.
type progressLine struct {
	mu      sync.Mutex
	w       io.Writer
	pending bool // a progress line is on screen
}

const progressWidth = 60 // covers "... finished N ops" and its padding

func (p *progressLine) report(done int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "... finished %d ops%30s\r", done, "")
	p.pending = true
}

func (p *progressLine) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending {
		fmt.Fprintf(p.w, "%*s\r", progressWidth, "")
		p.pending = false
	}
}
