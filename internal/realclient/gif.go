package realclient

import "fmt"

// GIF returns a valid 1×1 GIF image of exactly n bytes (n at least 40),
// padded with a comment: a browser decodes it to the end, where an
// invalid image would make it cancel the download (and close a kept
// connection) at the first bytes it cannot decode.
func GIF(n int) []byte {
	head := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00")       // screen 1×1, two colours
	tail := []byte("\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b") // one pixel, trailer
	if n < len(head)+len(tail)+5 {
		panic(fmt.Sprintf("realclient.GIF(%d): want at least %d bytes", n, len(head)+len(tail)+5))
	}
	b := append(append([]byte{}, head...), 0x21, 0xfe) // comment extension
	// Sub-blocks of up to 255 bytes, each after its length byte, then
	// the extension's terminator.
	for left := n - len(head) - len(tail) - 3; left > 0; {
		k := min(left-1, 255)
		if left-1-k == 1 { // a lone byte would be left: no sub-block fits it
			k--
		}
		b = append(b, byte(k))
		b = append(b, make([]byte, k)...)
		left -= k + 1
	}
	b = append(b, 0)
	return append(b, tail...)
}
