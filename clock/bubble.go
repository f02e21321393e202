package clock

import (
	"bytes"
	"runtime"
)

// InBubble reports whether the calling goroutine runs inside a
// testing/synctest bubble, where the time package's clock is the bubble's
// fake one: time stands still while any goroutine of the bubble runs and
// jumps when all are durably blocked.
//
// synctest has no call that answers this (synctest.Wait panics outside a
// bubble but blocks inside one), so InBubble reads the goroutine's own
// traceback header, which names its bubble since Go 1.25:
// "goroutine 7 [running, synctest bubble 1]:".
func InBubble() bool {
	_, ok := bubbleOf(ownHeader())
	return ok
}

// BubbleOthers returns how many goroutines of the caller's bubble, other
// than the caller and those of the testing and synctest packages that
// run the bubble, still exist; how many of them are blocked but not
// durably (on I/O, a mutex, a channel made outside the bubble), which
// stops the bubble's time while they are; and how many are running or
// runnable, which may yet free those. All are 0 outside a bubble.
func BubbleOthers() (others, stuck, active int) {
	id, ok := bubbleOf(ownHeader())
	if !ok {
		return 0, 0, 0
	}
	buf := AllStacks()
	// The caller's own record comes first.
	for i, rec := range bytes.Split(buf, []byte("\n\n")) {
		hdr, _, _ := bytes.Cut(rec, []byte("\n"))
		if b, ok := bubbleOf(hdr); i == 0 || !ok || !bytes.Equal(b, id) {
			continue
		}
		if bytes.Contains(rec, []byte("\ninternal/synctest.Run(")) || bytes.Contains(rec, []byte("\ntesting/synctest.testingSynctestTest(")) {
			continue
		}
		others++
		state, _, _ := bytes.Cut(hdr, []byte(", synctest bubble "))
		switch {
		case bytes.Contains(state, []byte("[running")) || bytes.Contains(state, []byte("[runnable")):
			active++
		case !bytes.Contains(state, []byte("(durable)")):
			stuck++
		}
	}
	return others, stuck, active
}

// ownHeader is the first line of the calling goroutine's traceback.
func ownHeader() []byte {
	var b [128]byte
	hdr := b[:runtime.Stack(b[:], false)]
	hdr, _, _ = bytes.Cut(hdr, []byte("\n"))
	return hdr
}

// bubbleOf returns the bubble a traceback header names.
func bubbleOf(hdr []byte) ([]byte, bool) {
	_, after, ok := bytes.Cut(hdr, []byte(", synctest bubble "))
	if !ok {
		return nil, false
	}
	id, _, ok := bytes.Cut(after, []byte("]"))
	return id, ok
}

// AllStacks returns every goroutine's stack, as runtime.Stack(buf, true)
// writes them: the caller's first, then the others, a blank line apart.
func AllStacks() []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
