package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/emu"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/proxy"
)

var proxyCmd = command{Command: cli.Command{Name: "proxy", Repeatable: []string{"forward", "allow"}, Rules: cli.Rules{Groups: cli.LinkRunGroups, Hidden: []string{"clock"}, Refuse: map[string]string{
	"backend":    "the proxy runs the emulated stacks; for programs' own TCP across the link, see netemu shell",
	"link":       "it picks the kernel backend's link",
	"plot":       "the proxy draws no figure; --timeline writes its data",
	"waterfall":  "the proxy draws no waterfall",
	"exact":      "real programs run in real time, where hosts take the time they take",
	"host-noise": "real programs run in real time, where hosts take the time they take"}}},
	synopsis: "--forward LISTEN=UPSTREAM | --socks5 ADDR [flags]", about: "put unmodified programs behind the link: real sockets in, the emulated link across, real upstreams out (real clock, no root)",
	example: "netemu proxy --forward 127.0.0.1:8080=127.0.0.1:3000 --rtt 100ms --rate 5mbit", run: cmdProxy, help: proxyHelp}

// cmdProxy puts real programs behind the link: it listens on real
// sockets (--forward, --socks5) and carries each connection across an
// emulated link on the real clock (package proxy). The first interrupt
// stops accepting and drains for --grace, the second aborts what is left;
// then the summary: one row, or one JSON line, per connection.
func cmdProxy(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	return proxyCommand{}.run(ctx, cmd, args, w, stderr)
}

// proxyCommand is netemu proxy with what it takes from the process: how
// it reaches upstreams and which interrupts it hears. Its zero value is
// the command as main runs it; tests set its fields to stand in for the
// system's resolver, its dialer and the process's signals.
type proxyCommand struct {
	// base is the proxy's configuration before the flags: they set the
	// listeners, the destination rule, the observer, the log and, with
	// --json, OnEnd over it, and leave the rest as it is (DialUpstream
	// and LookupHost: nil for package proxy's defaults).
	base proxy.Config

	// interrupts, if not nil, are the interrupts that reach the process,
	// a signal that ended the run's context among them; nil means SIGINT
	// and SIGTERM, caught from the proxy's start to the command's end.
	interrupts <-chan os.Signal
}

// run is netemu proxy with args, its output on w and stderr.
func (pc proxyCommand) run(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	// Connections report their failures from their own goroutines.
	stderr = cli.NewLockedWriter(stderr)
	o := cli.NewOptions(ctx)
	fs := cli.NewFlagSet(cmd, o)
	po := proxyFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return err
	}
	cli.AllowStop(ctx, po.grace) // the drain's, after the first interrupt
	if fs.NArg() > 0 {
		return usagef("proxy: unexpected argument %q; flags look like --forward 127.0.0.1:8080=127.0.0.1:80", fs.Arg(0))
	}
	lc, tcp, err := o.RealLink("the proxy runs on the real clock")
	if err != nil {
		return err
	}
	if err := checkProxy(o, ctx, po); err != nil {
		return err
	}
	o.PrintNotes(stderr)

	c := experiment.Case{}
	watch, err := o.Attach(&c)
	if err != nil {
		return err
	}
	n, err := emu.New(emu.Config{Link: lc, TCP: tcp, Clock: emu.Real, Seed: o.Seed, Probe: c.Probe})
	if err != nil {
		watch.Finish()
		return err
	}
	defer n.Close()
	p, err := pc.newProxy(n, o.JSON, po, c, w, stderr)
	if err != nil {
		watch.Finish()
		return err
	}
	announceProxy(stderr, p, po, lc)

	// The first interrupt is the context's end; a second one, during the
	// drain, aborts what is left.
	sigs, stop := pc.catchInterrupts()
	defer stop()
	<-ctx.Done()
	drainProxy(ctx, p, sigs, po.grace, stderr)
	ferr := watch.Finish()
	if err := proxySummary(o, w, stderr, p, n); err != nil {
		return err
	}
	if ferr != nil {
		return ferr
	}
	return interrupted(ctx)
}

// catchInterrupts returns pc.interrupts, or, without them, the SIGINT
// and SIGTERM that reach the process from now on; stop stops them.
func (pc proxyCommand) catchInterrupts() (sigs <-chan os.Signal, stop func()) {
	if pc.interrupts != nil {
		return pc.interrupts, func() {}
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// proxySummary writes, once p has stopped, the summary of its
// connections on w (unless --json) and the link's line on stderr. The
// summary's total and the link's line give one count of
// retransmissions, the proxy's, read once.
func proxySummary(o *cli.Options, w, stderr io.Writer, p *proxy.Proxy, n *emu.Net) error {
	tot := p.Totals()
	if !o.JSON {
		if err := writeProxySummary(w, p.Records(), tot); err != nil {
			return err
		}
	}
	st := n.Stats().Link
	fmt.Fprintf(stderr, "netemu proxy: the link: %d packets delivered, %d dropped, %d retransmitted\n",
		st[link.AtoB].Packets+st[link.BtoA].Packets, st[link.AtoB].Drops.Total()+st[link.BtoA].Drops.Total(), tot.LinkRetransmits)
	return nil
}

// checkProxy refuses the proxy's own flags that say nothing to listen
// on, or do not apply, forwards that lead back to the proxy (a loop),
// and the output files that cannot be written; with
// --check it connects to each forward's upstream once.
func checkProxy(o *cli.Options, ctx context.Context, po *proxyOptions) error {
	if len(po.forwards) == 0 && po.socks == "" {
		return usagef("proxy: nothing to listen on; give --forward 127.0.0.1:8080=127.0.0.1:80 (repeatable) or --socks5 127.0.0.1:1080")
	}
	if po.allow != nil && po.socks == "" {
		return usagef("proxy: --allow %s applies to --socks5, which is not given; forwards reach their own upstreams", po.allow.String())
	}
	if po.grace < 0 {
		return usagef("--grace %v: want 0 or more", po.grace)
	}
	if err := o.CheckOutputs(); err != nil {
		return err
	}
	// Before --check: a forward to itself would be found refusing.
	if err := proxy.CheckLoops(ctx, po.forwards, nil); err != nil {
		return usagef("proxy: --%v", err)
	}
	for _, f := range po.forwards {
		if !po.check {
			break
		}
		if err := proxy.CheckUpstream(ctx, f.Upstream); err != nil {
			return usagef("--forward %s: %v", f, err)
		}
	}
	return nil
}

// newProxy starts the proxy's listeners on network n, observed as case
// c is, with pc.base's configuration under the flags'. With --json
// (asJSON) each connection's record is a line on w as it ends; the table
// keeps the last proxy.KeptRecords and the totals, so memory does not
// grow with the connections served.
func (pc proxyCommand) newProxy(n *emu.Net, asJSON bool, po *proxyOptions, c experiment.Case, w, stderr io.Writer) (*proxy.Proxy, error) {
	cfg := pc.base
	cfg.Forwards, cfg.SOCKS5, cfg.Allow, cfg.Observe = po.forwards, po.socks, po.allow, c.Observe
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, "netemu proxy: "+format+"\n", args...) }
	if asJSON {
		enc := json.NewEncoder(cli.NewLockedWriter(w))
		cfg.OnEnd = func(r proxy.Record) { enc.Encode(r) }
	}
	p, err := proxy.New(n, cfg)
	if err != nil {
		return nil, usagef("%s", strings.TrimPrefix(err.Error(), "proxy: "))
	}
	return p, nil
}

// announceProxy says on stderr where p listens and where each listener
// leads across link lc, warns of each one beyond loopback, and says how
// to stop.
func announceProxy(stderr io.Writer, p *proxy.Proxy, po *proxyOptions, lc link.Config) {
	path := cli.LinkPath(lc)
	reach := "loopback only (--allow widens it)"
	if po.allow != nil {
		reach = po.allow.String()
	}
	for i, a := range p.Addrs() {
		if i < len(po.forwards) {
			fmt.Fprintf(stderr, "netemu proxy: %s → %s across the link (%s)\n", a, po.forwards[i].Upstream, path)
		} else {
			fmt.Fprintf(stderr, "netemu proxy: SOCKS5 and HTTP CONNECT on %s, across the link (%s), to %s\n", a, path, reach)
		}
		if !proxy.Loopback(a.String()) {
			what := reach
			if i < len(po.forwards) {
				what = po.forwards[i].Upstream
			}
			fmt.Fprintf(stderr, "netemu proxy: warning: %s listens beyond loopback, without authentication: whoever reaches it reaches %s\n", a, what)
		}
	}
	fmt.Fprintf(stderr, "netemu proxy: interrupt (Ctrl-C) to stop\n")
}

// drainProxy stops p, ctx having ended: open connections may go on for
// grace, unless an interrupt on sigs beyond the one that ended ctx
// resets them sooner.
func drainProxy(ctx context.Context, p *proxy.Proxy, sigs <-chan os.Signal, grace time.Duration, stderr io.Writer) {
	fmt.Fprintf(stderr, "netemu proxy: stopping: open connections (%d) may go on for %v; interrupt again to reset them now\n", p.Active(), grace)
	abort, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// When a signal ended the context, that signal came here too.
		need := 1
		var se *cli.SignalError
		if errors.As(context.Cause(ctx), &se) {
			need = 2
		}
		for got := 0; got < need; got++ {
			select {
			case <-sigs:
			case <-abort.Done():
				return
			}
		}
		cancel()
	}()
	if err := p.Drain(abort, grace); err != nil {
		fmt.Fprintf(stderr, "netemu proxy: connections still open were reset\n")
	}
}

// interrupted is how a command that serves until it is interrupted ends
// once ctx is done: an interrupt is how it stops, so the status says so
// (130 for SIGINT), without the line of a run cut short; nil otherwise.
func interrupted(ctx context.Context) error {
	var se *cli.SignalError
	if errors.As(context.Cause(ctx), &se) {
		return &exitError{code: se.ExitStatus()}
	}
	return nil
}

// forwardList is the repeatable --forward.
type forwardList []proxy.Forward

func (f *forwardList) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.String())
	}
	return strings.Join(s, " ")
}

func (f *forwardList) Set(s string) error {
	x, err := proxy.ParseForward(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), fmt.Sprintf("forward %q: ", s)))
	}
	*f = append(*f, x)
	return nil
}

// writeProxySummary writes a row for each of the last connections kept
// and a total over all of them: "total" in the conn column, and how many
// connections it sums where a row names its way in. The total's
// retransmits are the link's, as the line at the foot gives them: the
// connections' and, on a line of their own, those in no connection's
// record.
func writeProxySummary(w io.Writer, recs []proxy.Record, tot proxy.Totals) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conn\tvia\tupstream\tduration\tbytes up\tbytes down\tretransmits\t  error")
	if earlier := tot.Conns - len(recs); earlier > 0 {
		fmt.Fprintf(tw, "…\t%d earlier connections, in the total only\t\t\t\t\t\t\n", earlier)
	}
	for _, r := range recs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t  %s\n", r.ID, r.Via, r.Upstream, fmtDur(r.Duration), r.BytesUp, r.BytesDown, r.Retransmits, r.Err)
	}
	if other := tot.LinkRetransmits - tot.Retransmits; other > 0 {
		fmt.Fprintf(tw, "…\tretransmits in no connection's record\t\t\t\t\t%d\t\n", other)
	}
	conns := fmt.Sprintf("%d connections", tot.Conns)
	if tot.Conns == 1 {
		conns = "1 connection"
	}
	fmt.Fprintf(tw, "total\t%s\t\t\t%d\t%d\t%d\t\n", conns, tot.BytesUp, tot.BytesDown, tot.LinkRetransmits)
	return tw.Flush()
}

// prefixList is the repeatable --allow: an address or a prefix.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	var s []string
	for _, x := range *l {
		s = append(s, x.String())
	}
	return strings.Join(s, ", ")
}

func (l *prefixList) Set(s string) error {
	pr, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return fmt.Errorf("want an address or a prefix, like 127.0.0.1, 10.0.0.0/8 or ::/0")
		}
		pr = netip.PrefixFrom(a, a.BitLen())
	}
	*l = append(*l, pr.Masked())
	return nil
}

// proxyOptions are the proxy's own flags.
type proxyOptions struct {
	forwards forwardList
	allow    prefixList
	socks    string
	grace    time.Duration
	check    bool
}

// proxyFlags adds the proxy's own flags to fs.
func proxyFlags(fs *flag.FlagSet) *proxyOptions {
	po := &proxyOptions{}
	fs.Var(&po.forwards, "forward", "carry connections to LISTEN (a real address: 127.0.0.1:8080; 8080 or :8080 is loopback) across the link to UPSTREAM (host:port); repeatable")
	fs.StringVar(&po.socks, "socks5", "", "listen for SOCKS5 CONNECT (and HTTP CONNECT) on this address, like 127.0.0.1:1080 (a port alone is loopback): the client names the upstream")
	fs.Var(&po.allow, "allow", "let SOCKS5 and CONNECT clients reach this address or prefix (10.0.0.0/8; 0.0.0.0/0 for any IPv4) instead of loopback only; repeatable")
	fs.DurationVar(&po.grace, "grace", 5*time.Second, "after an interrupt, how long open connections may go on before they are reset")
	fs.BoolVar(&po.check, "check", true, "at the start, open one connection to each --forward's upstream and close it, so that a typo fails at once; a server that serves one client (iperf3 -s -1) takes it for its client: give --check=false for those")
	return po
}

// proxyHelp lists the proxy's own flags, for netemu help proxy; the
// shared flags it takes follow.
func proxyHelp(c *cli.Command) string {
	var b strings.Builder
	b.WriteString("\nProxy flags (the link's flags below apply; --clock is real):\n")
	cli.OwnFlagsTable(&b, func(fs *flag.FlagSet) { proxyFlags(fs) }, func(f *flag.Flag) string {
		return map[string]string{"forward": " LISTEN=UPSTREAM", "socks5": " ADDR", "allow": " PREFIX", "grace": " " + f.DefValue, "check": "=false"}[f.Name]
	})
	b.WriteString("\nA connection's own TCP ends at the proxy, on loopback: the emulated stack's TCP\ncrosses the link in its place (Nagle, congestion control, timers); for a\nprogram's own TCP across the link, use kernel mode.\n")
	b.WriteString("\nWho can use it: the listeners have no authentication. A port alone (8080,\n:8080) listens on loopback; another address (0.0.0.0:8080) is reachable by\nwhoever reaches this machine, and the proxy warns. SOCKS5 and CONNECT reach\nloopback only, unless --allow says more.\n")
	b.WriteString("\nEvery connection takes one of the emulated client host's 49,536 ephemeral ports\n(16000 to 65535), held for 60 s of TIME_WAIT after it closes: past about 49,500\nconnections a minute, new ones fail with \"no ports are available\".\n")
	return b.String() + cli.FlagHelp(c)
}
