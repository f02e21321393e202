package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/netemu/netemu/cli"
)

var versionCmd = command{Command: cli.Command{Name: "version"}, about: "the module version, the commit and its date as the build recorded them, and the Go and gVisor versions (also --version, -v)",
	example: "netemu version", run: cmdVersion, help: func(*cli.Command) string { return "" }}

// cmdVersion prints the module's version ("(devel)" when built from a
// checkout), the commit, its date and whether the tree had changes, as
// go build stamps them from the version control system, then the Go
// version and the gVisor version it was built with. "netemu --version"
// and "netemu -v" print the same.
func cmdVersion(_ context.Context, _ *cli.Command, args []string, w, _ io.Writer) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			return flag.ErrHelp
		}
		return usagef("version: unexpected argument %q; it takes none", args[0])
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	_, err := io.WriteString(w, versionText(bi, runtime.GOOS, runtime.GOARCH))
	return err
}

// versionText is what version prints for the build info bi.
func versionText(bi *debug.BuildInfo, goos, goarch string) string {
	version, gvisor := bi.Main.Version, "(unknown)"
	if version == "" {
		version = "(unknown)"
	}
	for _, d := range bi.Deps {
		if d.Path == "gvisor.dev/gvisor" {
			gvisor = d.Version
		}
	}
	var commit, date string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			date = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "netemu %s\n", version)
	switch {
	case commit == "":
		b.WriteString("commit (not recorded: built outside a git checkout, or with -buildvcs=false)\n")
	default:
		fmt.Fprintf(&b, "commit %s", commit)
		if date != "" {
			fmt.Fprintf(&b, " of %s", date)
		}
		if modified {
			b.WriteString(", with changes not committed")
		}
		b.WriteString("\n")
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	fmt.Fprintf(&b, "%s %s/%s\ngvisor.dev/gvisor %s\n", goVersion, goos, goarch, gvisor)
	return b.String()
}

// moduleVersion is the module's version as the build recorded it:
// "(devel)" from a checkout, "(unknown)" without build info.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(unknown)"
}
