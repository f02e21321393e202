package proxy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// clipLen is how much of a value an error quotes.
const clipLen = 64

// Clip is s as an error or a log line quotes a value a user gave: whole
// up to 64 bytes; beyond, its first 64 bytes (cut at a character's
// start), "…" and its length.
func Clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut(s)], len(s))
}

// cut is where Clip cuts s: at most clipLen bytes, at a character's
// start.
func cut(s string) int {
	n := clipLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// ClipWords is msg with every run of characters other than spaces longer
// than 64 bytes clipped as Clip does, quotes and punctuation around it
// kept: an error of a library that quotes a user's value whole (a netem
// option, an address) stays short.
func ClipWords(msg string) string {
	var b strings.Builder
	for len(msg) > 0 {
		i := strings.IndexAny(msg, " \t\n")
		if i < 0 {
			i = len(msg)
		}
		w := msg[:i]
		if len(w) <= clipLen {
			b.WriteString(w)
		} else {
			core := strings.TrimLeft(w, `"'(`)
			lead := w[:len(w)-len(core)]
			core = strings.TrimRight(core, `"'),.:;`)
			trail := w[len(lead)+len(core):]
			fmt.Fprintf(&b, "%s%s…%s (%d bytes)", lead, core[:cut(core)], trail, len(core))
		}
		if i < len(msg) {
			b.WriteByte(msg[i])
			i++
		}
		msg = msg[i:]
	}
	return b.String()
}
