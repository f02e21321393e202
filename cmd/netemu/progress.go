package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line progress bar on stderr while cases run, and
// only when stderr is a terminal: redirected output and stdout never see
// it.
type progress struct {
	w     io.Writer // nil: disabled
	total int

	mu    sync.Mutex
	done  int
	label string
	since time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress starts a bar for total cases. show forces it on or off for
// cases that are short (a single virtual-clock run).
func newProgress(stderr io.Writer, total int, show bool) *progress {
	p := &progress{total: total, stop: make(chan struct{})}
	if !show || !isTerminal(stderr) {
		return p
	}
	p.w = stderr
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.draw()
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

// start says that case label begins.
func (p *progress) start(label string) {
	p.mu.Lock()
	p.label, p.since = label, time.Now()
	p.mu.Unlock()
}

// finish says that the current case ended.
func (p *progress) finish() {
	p.mu.Lock()
	p.done++
	p.mu.Unlock()
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil || time.Since(p.since) < 300*time.Millisecond && p.done == 0 {
		return
	}
	const width = 24
	filled := width * p.done / max(p.total, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s (%.1fs)", strings.Repeat("#", filled), strings.Repeat(" ", width-filled),
		p.done, p.total, p.label, time.Since(p.since).Seconds())
}

// close erases the bar.
func (p *progress) close() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\033[K")
}
