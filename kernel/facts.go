//go:build linux

package kernel

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kernelHZ reads CONFIG_HZ from the running kernel's configuration, if it
// is published (/proc/config.gz or /boot/config-RELEASE); 0 if unknown.
func kernelHZ() int {
	var r io.Reader
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			r = z
		}
	}
	if r == nil {
		var u unix.Utsname
		if unix.Uname(&u) != nil {
			return 0
		}
		f, err := os.Open("/boot/config-" + unix.ByteSliceToString(u.Release[:]))
		if err != nil {
			return 0
		}
		defer f.Close()
		r = f
	}
	s := bufio.NewScanner(r)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CONFIG_HZ="); ok {
			hz, _ := strconv.Atoi(v)
			return hz
		}
	}
	return 0
}
