package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/time/rate"
)

// Between a case's end and the next case's start the bar stays away,
// however often the redraw timer ticks: stdout prints there, and a bar
// drawn in between would sit on the line stdout writes to (seen on a
// loaded machine, where the timer ticked between a case's end and its
// table).
func TestProgressStaysAwayBetweenCases(t *testing.T) {
	var screen bytes.Buffer
	p := &Progress{out: &screen, total: 3, shared: true, begun: time.Now().Add(-time.Hour),
		redraws: rate.NewLimiter(rate.Inf, 1)}
	p.bar = progressbar.NewOptions(3, progressbar.OptionSetWriter(&screen), progressbar.OptionThrottle(0))
	tick := func() {
		p.mu.Lock()
		p.drawLocked(false)
		p.mu.Unlock()
	}
	p.Start("first")
	tick()
	if !p.shown || screen.Len() == 0 {
		t.Fatal("the bar was not drawn while a case ran")
	}
	p.Finish()
	cleared := screen.Len()
	for range 5 {
		tick()
	}
	if screen.Len() != cleared {
		t.Errorf("the redraw timer drew %q after the case ended; want the line left to stdout until the next case starts", screen.String()[cleared:])
	}
	p.Start("second")
	if screen.Len() == cleared {
		t.Error("the next case's start did not bring the bar back")
	}
}

// The same holds when the bar has not been drawn yet: a first case that
// ends before the bar's delay leaves the line to stdout too, and a timer
// tick after the delay, while stdout prints that case's table, does not
// draw the bar for the first time on stdout's line (seen on a terminal:
// the bar over a row of reproduce's keepalive table).
func TestProgressStaysAwayBeforeItsFirstDraw(t *testing.T) {
	var screen bytes.Buffer
	p := &Progress{out: &screen, total: 3, shared: true, begun: time.Now(),
		redraws: rate.NewLimiter(rate.Inf, 1)}
	p.bar = progressbar.NewOptions(3, progressbar.OptionSetWriter(&screen), progressbar.OptionThrottle(0))
	p.Start("first")
	p.Finish()
	if screen.Len() != 0 {
		t.Fatalf("the bar was drawn within its delay: %q", screen.String())
	}
	p.mu.Lock()
	p.begun = time.Now().Add(-time.Hour) // the delay has passed
	for range 5 {
		p.drawLocked(false)
	}
	p.mu.Unlock()
	if screen.Len() != 0 {
		t.Errorf("the redraw timer drew %q between the first case's end and the next start; want the line left to stdout", screen.String())
	}
	p.Start("second")
	if screen.Len() == 0 {
		t.Error("the next case's start did not draw the bar")
	}
}
