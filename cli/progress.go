package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"golang.org/x/time/rate"
)

// Progress bar timing: the bar appears only once a command has run this
// long, and redraws at most this often.
const (
	progressDelay  = 300 * time.Millisecond
	progressRedraw = 200 * time.Millisecond
	// A failure to draw is reported at most once in this interval.
	progressWarnEvery = 10 * time.Second
)

// Progress shows a progress bar on stderr while cases run, only when
// stderr is a terminal: redirected output never sees an escape code, and
// stdout never changes.
//
// The bar keeps a line of its own. When stdout is the same terminal, the
// bar steps aside after each case (when a command may print), clearing its
// line, and comes back when the next case starts; after the last case it
// is gone, and the screen holds exactly what stdout printed. Otherwise
// the bar ends drawn complete, followed by a newline. A command that ends
// early (an error) leaves no bar behind.
type Progress struct {
	bar   *progressbar.ProgressBar // nil: disabled
	out   io.Writer                // stderr
	total int
	// shared: stdout is a terminal too, so stdout's lines and the bar
	// share the screen.
	shared bool

	mu      sync.Mutex
	done    int
	label   string    // the case running
	since   time.Time // when it started
	begun   time.Time // when the bar was made
	shown   bool      // drawn at least once
	away    bool      // cleared between two cases
	ended   bool      // completed, or cleared for good
	redraws *rate.Limiter
	warn    rate.Sometimes
	stop    chan struct{}
	wg      sync.WaitGroup
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewProgress makes a bar for total cases on stderr. show says whether
// the command is worth a bar at all (a single virtual-clock run is not).
func NewProgress(stderr io.Writer, total int, show bool) *Progress {
	p := &Progress{out: stderr, total: total, stop: make(chan struct{}), begun: time.Now(),
		redraws: rate.NewLimiter(rate.Every(progressRedraw), 1),
		warn:    rate.Sometimes{First: 1, Interval: progressWarnEvery}}
	if !show || total < 1 || !isTerminal(stderr) {
		return p
	}
	p.shared = isTerminal(os.Stdout)
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetTheme(progressbar.ThemeASCII),
		progressbar.OptionSetWidth(24),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionThrottle(0), // redraws are throttled here
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
	)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressRedraw / 2)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				p.drawLocked(false)
				p.mu.Unlock()
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

// start says that case label begins.
func (p *Progress) Start(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.since = label, time.Now()
	// Back at once where the last case left it: a bar that vanished
	// between cases would flicker.
	p.drawLocked(p.away)
}

// finish says that the current case ended.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+1, p.total)
	if p.bar == nil || p.ended {
		return
	}
	switch {
	case p.shared:
		// stdout may print now: give it a clean line, and keep the bar
		// off it until the next start, also when it was never drawn.
		if p.shown && !p.away {
			p.check(p.bar.Clear())
		}
		p.away = true
		p.ended = p.shown && p.done == p.total
	case !p.shown:
	case p.done == p.total:
		p.drawLocked(true) // complete, then a newline
		p.ended = true
	}
}

// drawLocked redraws the bar, at most once per progressRedraw unless
// forced, and not before the command has run for progressDelay. A bar
// that stepped aside comes back only when forced (start): between a
// case's end and the next case's start, stdout owns the line.
func (p *Progress) drawLocked(force bool) {
	if p.bar == nil || p.ended || p.label == "" || time.Since(p.begun) < progressDelay {
		return
	}
	if !force && (p.away || !p.redraws.Allow()) {
		return
	}
	p.bar.Describe(p.description())
	p.check(p.bar.Set(p.done))
	p.shown, p.away = true, false
}

// description is the running case and, once it takes a while, its time.
func (p *Progress) description() string {
	d := p.label
	if p.done == p.total {
		return "done"
	}
	if s := time.Since(p.since); s >= time.Second {
		d += fmt.Sprintf(" (%.0fs)", s.Seconds())
	}
	// Keep the line shorter than the terminal: a wrapped line cannot be
	// redrawn in place.
	if f, ok := p.out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			if r := []rune(d); w-50 > 10 && len(r) > w-50 {
				d = string(r[:w-51]) + "…"
			}
		}
	}
	return d
}

// check reports a failure to draw, once per progressWarnEvery however
// often it repeats.
func (p *Progress) check(err error) {
	if err != nil {
		p.warn.Do(func() { fmt.Fprintf(p.out, "\nnetemu: progress bar: %v\n", err) })
	}
}

// close stops the bar; one that did not complete is cleared.
func (p *Progress) Close() {
	if p.bar == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && !p.ended && !p.away {
		p.check(p.bar.Clear())
	}
	p.ended = true
}
