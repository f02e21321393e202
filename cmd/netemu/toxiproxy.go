package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/proxy"
	"github.com/netemu/netemu/toxiproxy"
)

var toxiproxyCmd = command{Command: cli.Command{Name: "toxiproxy", Rules: cli.Rules{Groups: []*cli.Group{&cli.LinkGroup, &cli.ImpairGroup}, Hidden: []string{"clock"},
	Defaults: map[string]string{"rtt": "0", "rate": "0", "delack": "0"},
	Refuse: map[string]string{
		"exact":      "real programs run in real time, where hosts take the time they take",
		"host-noise": "real programs run in real time, where hosts take the time they take"},
	Other: "each connection of toxiproxy's proxies has a network of its own, on the emulated stacks: no single link to record, draw or sweep, and no kernel backend"}},
	synopsis: "[--listen ADDR] [link flags]", about: "toxiproxy's HTTP API and clients on the emulated link: each connection of its proxies gets a link of its own, with the proxy's toxics (real clock, no root)",
	example: "netemu toxiproxy --listen 127.0.0.1:8474", run: cmdToxiproxy, help: toxiproxyHelp}

// cmdToxiproxy serves toxiproxy's HTTP API (package toxiproxy) until an
// interrupt: the proxies it makes carry each connection across a link of
// its own, the base link of the flags with the proxy's toxics.
func cmdToxiproxy(ctx context.Context, cmd *cli.Command, args []string, _, stderr io.Writer) error {
	stderr = cli.NewLockedWriter(stderr) // requests and connections log from their goroutines
	o := cli.NewOptions(ctx)
	fs := cli.NewFlagSet(cmd, o)
	to := toxiproxyFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("toxiproxy: unexpected argument %q; flags look like --listen 127.0.0.1:8474", fs.Arg(0))
	}
	if to.maxConns < 1 {
		return usagef("toxiproxy: --max-conns %d: want 1 or more (default %d)", to.maxConns, toxiproxy.DefaultMaxConns)
	}
	addr, err := to.listenAddr(o.Given)
	if err != nil {
		return err
	}
	lc, tcp, err := o.RealLink("the proxies carry real programs' connections")
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "netemu toxiproxy: "+format+"\n", args...) }
	s, err := toxiproxy.New(toxiproxy.Config{Listen: addr, Version: toxiproxyVersion(moduleVersion()), Link: lc, TCP: tcp, Seed: o.Seed, Logf: logf, MaxConns: to.maxConns})
	if err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), "toxiproxy: "))
	}
	if err := to.populate(s); err != nil {
		s.Close()
		return err
	}
	if err := s.Start(); err != nil {
		s.Close()
		return usagef("toxiproxy: --listen %s: %s", addr, strings.TrimPrefix(err.Error(), "toxiproxy: "))
	}
	defer s.Close()
	logf("toxiproxy's API on http://%s; each connection crosses a link of its own: %s before its proxy's toxics",
		s.Addr(), cli.LinkPath(lc))
	if !proxy.Loopback(s.Addr().String()) {
		logf("warning: the API listens beyond loopback, without authentication: whoever reaches %s makes proxies to any address", s.Addr())
	}
	logf("interrupt (Ctrl-C) to stop")
	cli.AllowStop(ctx, toxiproxy.CloseWait) // Close gives up on stuck networks after it, and names them
	<-ctx.Done()
	if err := s.Close(); err != nil {
		logf("%s", strings.TrimPrefix(err.Error(), "toxiproxy: "))
	}
	// An interrupt or SIGTERM is how a toxiproxy server stops: status 0,
	// as toxiproxy-server's, which a container runtime reads as a clean
	// stop (128 + the signal reads as a failure).
	var se *cli.SignalError
	if errors.As(context.Cause(ctx), &se) {
		logf("stopped by %v", se.Sig)
		return &exitError{code: 0}
	}
	return nil
}

// toxiproxyAPIVersion is the toxiproxy API netemu toxiproxy serves, as
// toxiproxy's own releases number it: the version its Go client, tested
// against it, has.
const toxiproxyAPIVersion = "2.12.0"

// toxiproxyVersion is what GET /version answers: a semantic version, as
// toxiproxy's clients and wrappers expect, the API's, with netemu's own
// version as its build metadata: "2.12.0+netemu.v0.0.0-20261207-96cf8d3".
// Build metadata takes letters, digits and hyphens in dot-separated
// identifiers (semver.org, item 10); other characters become dots.
func toxiproxyVersion(netemu string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '.'
	}, netemu)
	ids := []string{"netemu"}
	for _, id := range strings.Split(clean, ".") {
		if id != "" {
			ids = append(ids, id)
		}
	}
	return toxiproxyAPIVersion + "+" + strings.Join(ids, ".")
}

// listenAddr is the API's address: --listen's, with its host or port
// replaced by --host or --port (toxiproxy-server's way to say it) when
// given says they are.
func (to *toxiproxyOptions) listenAddr(given func(flag string) bool) (string, error) {
	addr, err := proxy.ListenAddr(to.listen)
	if err != nil {
		return "", usagef("toxiproxy: --listen %v", err)
	}
	if !given("host") && !given("port") {
		return addr, nil
	}
	host, port, _ := net.SplitHostPort(addr)
	if given("host") {
		host = to.host
	}
	if given("port") {
		port = to.port
	}
	if addr, err = proxy.ListenAddr(net.JoinHostPort(host, port)); err != nil {
		return "", usagef("toxiproxy: --host and --port: %v", err)
	}
	return addr, nil
}

// populate makes the proxies of --config's file on s, if it is given.
func (to *toxiproxyOptions) populate(s *toxiproxy.Server) error {
	if to.config == "" {
		return nil
	}
	f, err := os.Open(to.config)
	if err != nil {
		return usagef("toxiproxy: --config: %v", err)
	}
	err = s.Populate(f)
	f.Close()
	if err != nil {
		return usagef("toxiproxy: --config %s: %v", to.config, err)
	}
	return nil
}

// toxiproxyOptions are the command's own flags.
type toxiproxyOptions struct {
	listen, host, port, config string
	metrics                    bool // toxiproxy-server's -proxy-metrics, -runtime-metrics: no /metrics here
	maxConns                   int
}

// toxiproxyFlags adds the command's own flags to fs.
func toxiproxyFlags(fs *flag.FlagSet) *toxiproxyOptions {
	to := &toxiproxyOptions{}
	fs.StringVar(&to.listen, "listen", toxiproxy.DefaultListen, "the API's address (toxiproxy's port; a port alone is loopback); another address than loopback lets whoever reaches it make proxies")
	fs.StringVar(&to.host, "host", "", "toxiproxy-server's flag: the API's host, in place of --listen's")
	fs.StringVar(&to.port, "port", "", "toxiproxy-server's flag: the API's port, in place of --listen's")
	fs.IntVar(&to.maxConns, "max-conns", toxiproxy.DefaultMaxConns, "at most this many connections open at once across the proxies, each with a link of its own; the next wait in the listen backlog")
	fs.StringVar(&to.config, "config", "", "toxiproxy-server's flag: make the proxies of this JSON file (an array, as POST /populate takes) before the API listens")
	fs.BoolVar(&to.metrics, "proxy-metrics", false, "toxiproxy-server's flag, taken and ignored: netemu serves no /metrics")
	fs.BoolVar(&to.metrics, "runtime-metrics", false, "toxiproxy-server's flag, taken and ignored: netemu serves no /metrics")
	return to
}

// toxiproxyHelp lists the command's own flags and what its shared ones
// mean here, for netemu help toxiproxy.
func toxiproxyHelp(c *cli.Command) string {
	var b strings.Builder
	b.WriteString("\nToxiproxy flags:\n")
	cli.OwnFlagsTable(&b, func(fs *flag.FlagSet) { toxiproxyFlags(fs) }, func(f *flag.Flag) string {
		return " " + map[string]string{"listen": f.DefValue, "host": "HOST", "port": "PORT", "config": "FILE", "max-conns": "N"}[f.Name]
	})
	b.WriteString(`
Toxiproxy 2.x's API and clients, on the emulated link: every connection a
proxy accepts gets a link of its own, the link flags below (by default no
delay and no rate limit, as a toxiproxy proxy without toxics) with the
proxy's toxics added per direction: latency and jitter (ms) are that
direction's one-way delay, bandwidth (KB/s, 1000 bytes) its rate, counting
whole IP packets (a bulk transfer's data gets about 96.5 % of it); timeout,
reset_peer, slow_close, limit_data and slicer act on the bytes; netem
("options": tc's netem options), loss ("percent") and qdisc ("options") are
netemu's own. Every toxic reaches the connections already open too: a
link toxic from their next packet on.
`)
	return b.String() + cli.FlagHelp(c)
}
