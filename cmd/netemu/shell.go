package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/netemu/netemu/cli"
	"github.com/netemu/netemu/experiment"
	"github.com/netemu/netemu/kernel"
	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/tcpstack"
)

var shellCmd = command{Command: cli.Command{Name: "shell", Repeatable: []string{"port"}, Rules: cli.Rules{Groups: cli.LinkRunGroups, Hidden: []string{"clock"}, Refuse: map[string]string{
	"backend":    "the command's own kernel TCP crosses the link",
	"delack":     "kernel TCP delays its own ACKs",
	"tcp":        "the command's own kernel TCP crosses the link",
	"json":       "the command's output is its own",
	"plot":       "shell draws no figure; --timeline writes its data",
	"waterfall":  "shell draws no waterfall",
	"exact":      "real programs run in real time, where hosts take the time they take",
	"host-noise": "real programs run in real time, where hosts take the time they take"}}},
	synopsis: "[flags] -- COMMAND [ARGS]", about: "run a command with its own kernel TCP behind the link, in a network namespace; the host's loopback services answer at 198.18.0.2 (needs root)",
	example: "netemu shell --rtt 55ms -- curl http://198.18.0.2:8080/", run: cmdShell, help: shellHelp}

// cmdShell runs a command in the client namespace of a kernel-mode
// network (package kernel): its own kernel TCP crosses the link to the
// server namespace, where the host's loopback services answer at
// kernel.ServerAddr (the ports --port names and, unless --isolated,
// every port listening on 127.0.0.1 at the start). The exit status is
// the command's.
func cmdShell(ctx context.Context, cmd *cli.Command, args []string, w, stderr io.Writer) error {
	o := cli.NewOptions(ctx)
	fs := cli.NewFlagSet(cmd, o)
	sf := shellFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usagef("shell: which command? write it after the flags: netemu shell --rtt 100ms -- curl http://%v:8080/", kernel.ServerAddr)
	}
	lc, tcp, via, err := shellLink(o, sf)
	if err != nil {
		return err
	}
	if err := checkCommand(argv[0]); err != nil {
		return err
	}
	fwd, err := sf.hostPorts()
	if err != nil {
		return err
	}
	o.PrintNotes(stderr)

	c := experiment.Case{Link: lc}
	watch, err := o.Attach(&c)
	if err != nil {
		return err
	}
	defer o.Announce(stderr)
	defer watch.Finish() // on every early return; the end checks its error
	n, err := shellNet(c, via, tcp)
	if err != nil {
		return err
	}
	defer n.Close()
	sh := kernel.Shell{Args: argv, Ports: fwd, Isolated: sf.isolated, Resolver: sf.resolver,
		Stdin: os.Stdin, Stdout: passThrough(w), Stderr: passThrough(stderr)}
	outside, err := sh.Forward(n)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "netemu shell: %s across the link (%s, %s); host loopback ports at %v: %s; the outside: %s\n",
		argv[0], cli.LinkPath(lc), n.Facts().Link, kernel.ServerAddr, orNone(fwd), outsideWords(outside))
	return runShell(ctx, n, sh, watch, stderr)
}

// runShell runs sh's program on n, the signals netemu receives passed on
// to it, and then says on stderr how it ended and what the link carried.
// The error ends netemu with the program's status, or says why watch
// could not complete its files.
func runShell(ctx context.Context, n *kernel.Net, sh kernel.Shell, watch *experiment.Watch, stderr io.Writer) error {
	sigs, stop := kernel.CatchSignals()
	defer stop()
	sh.Signals = sigs
	release := cli.HoldStop(ctx) // the program's signals, until it ends
	if ctx.Err() != nil {
		// A signal came first: the program never starts.
		release()
		return interrupted(ctx)
	}
	exit, err := sh.Run(n)
	release()
	var se *kernel.StartError
	if errors.As(err, &se) { // a shell's status for a command it cannot run
		return &exitError{code: 127, err: fmt.Errorf("shell: %v", se.Err)}
	}
	if err != nil {
		return err
	}
	ferr := watch.Finish()
	st := n.Stats().Link
	fmt.Fprintf(stderr, "netemu shell: exit status %d after %s; the link: %d packets delivered, %d dropped\n",
		exit.Status, fmtDur(exit.Took), st[link.AtoB].Packets+st[link.BtoA].Packets, st[link.AtoB].Drops.Total()+st[link.BtoA].Drops.Total())
	if ferr != nil {
		return ferr
	}
	return &exitError{code: exit.Status}
}

// shellLink is the link, the stacks and the way across (--link, netemu's
// own TUN link by default) that the flags describe for the shell: one
// value per flag, and flags that do not apply, or not together, refused.
func shellLink(o *cli.Options, sf *shellOptions) (link.Config, tcpstack.TCPConfig, kernel.Via, error) {
	lc, tcp, err := o.RealLink("kernel TCP runs on the real clock")
	if err != nil {
		return lc, tcp, "", err
	}
	if o.Given("seed") && !o.Impaired() {
		return lc, tcp, "", usagef("shell: --seed does not apply: kernel TCP takes no seed; the seed applies to the link's impairments (--loss, --netem, ...)")
	}
	lc.DelayedACK, lc.Seed = 0, o.Seed
	via := kernel.TUN // netemu's own link, unless --link says otherwise
	if o.Given("link") {
		via = kernel.Via(o.Via)
	}
	if err := o.CheckOutputs(); err != nil {
		return lc, tcp, "", err
	}
	if sf.isolated && sf.resolver.IsValid() {
		return lc, tcp, "", usagef("shell: --resolver does not apply with --isolated: no query leaves the server's namespace")
	}
	return lc, tcp, via, nil
}

// shellNet builds the kernel-mode network for case c's link, joined by
// via, with c's probe and, when c observes the link, the observer; the
// netem link, in the kernel, has no events to observe and is refused.
func shellNet(c experiment.Case, via kernel.Via, tcp tcpstack.TCPConfig) (*kernel.Net, error) {
	n, err := kernel.New(kernel.Config{Link: c.Link, Via: via, CongestionControl: tcp.CongestionControl, Probe: c.Probe})
	if err != nil {
		if errors.Is(err, kernel.ErrUnsupported) {
			return nil, usagef("shell: %v", err)
		}
		return nil, err
	}
	if c.Observe != nil && !n.Observe(c.Observe) {
		n.Close()
		return nil, usagef("shell: --pcap and --timeline need the TUN link: the netem link is in the kernel, with no events to observe")
	}
	return n, nil
}

// checkCommand checks that the program name can run and that netemu
// runs as root, so that a command that cannot run is one line, before
// anything is built: exit status 127 when it is not found, 126 when it
// is not executable, as shells say.
func checkCommand(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		code := 127
		if errors.Is(err, os.ErrPermission) {
			code = 126
		}
		return &exitError{code: code, err: fmt.Errorf("shell: %v", err)}
	}
	if os.Geteuid() != 0 {
		return usagef("shell: needs root to create network namespaces and TUN devices (CAP_SYS_ADMIN, CAP_NET_ADMIN); run it with sudo")
	}
	return nil
}

// outsideWords says what of the outside the command reaches, as
// kernel.Shell.Forward set it up.
func outsideWords(o kernel.Outside) string {
	switch {
	case !o.TCP:
		return "none (--isolated)"
	case !o.Resolver.IsValid():
		return "TCP (no resolver: /etc/resolv.conf names none; see --resolver)"
	}
	return "TCP and DNS (resolver " + o.Resolver.String() + ")"
}

// exitError ends a command with an exit status of its own: netemu
// shell's is its program's. err, if any, is reported first.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return "exit status " + strconv.Itoa(e.code)
}

// passThrough returns the file under w when w is the process's own
// output, so the command writes to it directly (a terminal stays one).
func passThrough(w io.Writer) io.Writer {
	if c, ok := w.(*checkedWriter); ok {
		if f, ok := c.w.(*os.File); ok {
			return f
		}
	}
	return w
}

// orNone lists ports, space-separated, or says "none".
func orNone(ports []uint16) string {
	if len(ports) == 0 {
		return "none"
	}
	words := make([]string, len(ports))
	for i, p := range ports {
		words[i] = strconv.Itoa(int(p))
	}
	return strings.Join(words, " ")
}

// shellOptions are the shell's own flags.
type shellOptions struct {
	ports    portList
	isolated bool
	resolver netip.AddrPort // the zero value: the host's
}

// hostPorts are the host's loopback ports the command reaches, in
// increasing order, each once: those --port names and, unless
// --isolated, every port listening now. An isolated command gets only
// what is named: any service forwarded is a way out, as a proxy or a
// proxy's API is.
func (o *shellOptions) hostPorts() ([]uint16, error) {
	if o.isolated {
		return slices.Compact(slices.Sorted(slices.Values(o.ports))), nil
	}
	return kernel.HostPorts(o.ports)
}

// shellFlags adds the shell's own flags to fs.
func shellFlags(fs *flag.FlagSet) *shellOptions {
	var o shellOptions
	fs.Var(&o.ports, "port", "make the host's 127.0.0.1:`PORT` reachable at "+kernel.ServerAddr.String()+":PORT (comma-separated, repeatable): with --isolated the only ports that are; otherwise in addition to those listening at the start, for services that start later")
	fs.BoolVar(&o.isolated, "isolated", false, "no network way out beyond the server's namespace: only the loopback ports --port names answer, none by default (the file system, with its Unix sockets, stays the host's)")
	fs.Func("resolver", "the DNS server `ADDR` (IP or IP:PORT) the command's queries go to (default: the host's, the first nameserver of /etc/resolv.conf)", func(s string) error {
		a, err := netip.ParseAddrPort(s)
		if err != nil {
			ip, perr := netip.ParseAddr(s)
			if perr != nil {
				return fmt.Errorf("%q is not an IP address or IP:PORT; want 192.0.2.53 or 192.0.2.53:5353", s)
			}
			a = netip.AddrPortFrom(ip, 53)
		}
		o.resolver = a
		return nil
	})
	return &o
}

// shellHelp says what the command finds, for netemu help shell; the
// shared flags it takes follow.
func shellHelp(c *cli.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe command runs in the client's network namespace (%v); the server's\n", kernel.ClientAddr)
	fmt.Fprintf(&b, "(%v) passes connections on to the host's 127.0.0.1, on every port that\n", kernel.ServerAddr)
	b.WriteString("listens there when the shell starts and on --port (with --isolated, on those\n")
	b.WriteString("--port names alone). NETEMU_SERVER, NETEMU_CLIENT and NETEMU_PORTS tell the\n")
	b.WriteString("command. Its exit status is netemu's. Needs root.\n")
	b.WriteString("\nWhat the command can reach:\n")
	b.WriteString("  - the host's loopback services on the ports listed, at " + kernel.ServerAddr.String() + ", across the link;\n")
	b.WriteString("  - TCP to other addresses and DNS, across the link and on from the host's\n")
	b.WriteString("    network, except this host's own addresses (127.0.0.0/8, 0.0.0.0/8, its\n")
	b.WriteString("    interfaces' and any other address it answers on), which are refused;\n")
	b.WriteString("    with --isolated, nothing beyond the server's namespace: only the ports\n")
	b.WriteString("    --port names answer, none by default;\n")
	b.WriteString("  - the host's files, devices and Unix sockets, as its user: the user sudo\n")
	b.WriteString("    names (SUDO_UID), or root without capabilities when netemu runs as root\n")
	b.WriteString("    itself, who still owns root's files: run untrusted commands through sudo.\n")
	b.WriteString("What it cannot: other protocols out (ICMP, UDP but DNS); its client namespace's\n")
	b.WriteString("routes and addresses, the host's namespaces and processes (its /proc is its\n")
	b.WriteString("own), sysctls and /sys (read-only): it has no capabilities and no_new_privs,\n")
	b.WriteString("so no setuid program gives any back.\n")
	b.WriteString("\nShell flags (the link's flags below apply; --clock is real, --delack is kernel TCP's own):\n")
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	shellFlags(fs)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(tw, "  --%s\t%s\n", strings.TrimSpace(f.Name+" "+name), usage)
	})
	tw.Flush()
	b.WriteString("\nUnlike netemu proxy, nothing splits the connection: the command's own kernel\nTCP (Nagle, congestion control, timers, socket options) crosses the link.\n")
	return b.String() + cli.FlagHelp(c)
}

// portList is the repeatable, comma-separated --port.
type portList []uint16

func (p *portList) String() string { return fmt.Sprint([]uint16(*p)) }

func (p *portList) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("%q is not a port; want 1 to 65535", v)
		}
		*p = append(*p, uint16(n))
	}
	return nil
}

var _ flag.Value = (*portList)(nil)
