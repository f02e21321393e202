package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// cmdVersion prints the module's version (or "(devel)" when built from a
// checkout, with the commit where the build records it), the Go version
// and the gVisor version it was built with.
func cmdVersion(_ context.Context, args []string, w, _ io.Writer) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			return flag.ErrHelp
		}
		return usagef("version: unexpected argument %q; it takes none", args[0])
	}
	version, gvisor, commit := "(unknown)", "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, d := range bi.Deps {
			if d.Path == "gvisor.dev/gvisor" {
				gvisor = d.Version
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				commit = " " + s.Value
			}
		}
	}
	_, err := fmt.Fprintf(w, "netemu %s%s\n%s %s/%s\ngvisor.dev/gvisor %s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, gvisor)
	return err
}
