package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/toxiproxy"
)

// cmdToxiproxy serves toxiproxy's HTTP API (package toxiproxy) until an
// interrupt: the proxies it makes carry each connection across a link of
// its own, the base link of the flags with the proxy's toxics.
func cmdToxiproxy(ctx context.Context, args []string, _, stderr io.Writer) error {
	stderr = &lockedWriter{w: stderr} // requests and connections log from their goroutines
	o := &options{}
	fs := newFlagSet("toxiproxy", o)
	listen := toxiproxyFlags(fs)
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("toxiproxy: unexpected argument %q; flags look like --listen 127.0.0.1:8474", fs.Arg(0))
	}
	o.set = setFlags(fs)
	addr, err := proxy.ListenAddr(*listen)
	if err != nil {
		return usagef("toxiproxy: --listen %v", err)
	}
	lc, tcp, err := o.realLink("toxiproxy", "the proxies carry real programs' connections")
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "netemu toxiproxy: "+format+"\n", args...) }
	s, err := toxiproxy.New(toxiproxy.Config{Listen: addr, Version: "netemu " + moduleVersion(), Link: lc, TCP: tcp, Seed: o.seed, Logf: logf})
	if err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), "toxiproxy: "))
	}
	if err := s.Start(); err != nil {
		return usagef("toxiproxy: --listen %s: %s", addr, strings.TrimPrefix(err.Error(), "toxiproxy: "))
	}
	defer s.Close()
	base := experiment.Case{Link: lc}
	logf("toxiproxy's API on http://%s; each connection crosses a link of its own: RTT %s, %s before its proxy's toxics",
		s.Addr(), fmtDur(base.RTT()), base.RateLabel())
	if !proxy.Loopback(s.Addr().String()) {
		logf("warning: the API listens beyond loopback, without authentication: whoever reaches %s makes proxies to any address", s.Addr())
	}
	logf("interrupt (Ctrl-C) to stop")
	<-ctx.Done()
	s.Close()
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		return &exitError{code: se.exitStatus()}
	}
	return nil
}

// toxiproxyFlags adds the command's own flags to fs.
func toxiproxyFlags(fs *flag.FlagSet) *string {
	return fs.String("listen", toxiproxy.DefaultListen, "the API's address (toxiproxy's port; a port alone is loopback); another address than loopback lets whoever reaches it make proxies")
}

// toxiproxyHelp lists the command's own flags and what its shared ones
// mean here, for netemu help toxiproxy.
func toxiproxyHelp() string {
	var b strings.Builder
	b.WriteString("\nToxiproxy flags:\n")
	fs := flag.NewFlagSet("toxiproxy", flag.ContinueOnError)
	toxiproxyFlags(fs)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) { fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, f.DefValue, f.Usage) })
	tw.Flush()
	b.WriteString(`
Toxiproxy 2.x's API and clients, on the emulated link: every connection a
proxy accepts gets a link of its own, the link flags below (by default no
delay and no rate limit, as a toxiproxy proxy without toxics) with the
proxy's toxics added per direction: latency and jitter (ms) are that
direction's one-way delay, bandwidth (KB/s, 1000 bytes) its rate, counting
whole IP packets (a bulk transfer's data gets about 96.5 % of it); timeout,
reset_peer, slow_close, limit_data and slicer act on the bytes; netem
("options": tc's netem options), loss ("percent") and qdisc ("options") are
netemu's own. Link toxics shape the connections opened after they change;
byte toxics reach open ones too.
`)
	return b.String()
}
