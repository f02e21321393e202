package kernel

import (
	"errors"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultKillAfter is Shell.KillAfter's default: how long a program may
// take to end after a SIGTERM or SIGHUP is passed on to it.
const DefaultKillAfter = 5 * time.Second

// Shell is one program run in a kernel-mode network's client namespace,
// as netemu shell runs it: Forward makes the host's loopback services
// (and, unless Isolated, the outside) answer across the link, Run runs
// the program with the signals its caller receives passed on, and gives
// its exit status as a shell does. A Shell is a plain value: Forward and
// Run change nothing in it, and each Net it is used on is the caller's
// to close.
type Shell struct {
	// Args is the program and its arguments; Args[0] is looked up in
	// PATH as exec.Command does. Run refuses an empty Args.
	Args []string

	// Ports are the host's loopback ports that Forward makes answer at
	// ServerAddr (ForwardHost), in order, and no others; the program's
	// NETEMU_PORTS lists them. HostPorts gives those listening now.
	Ports []uint16

	// Isolated keeps the program from anything beyond the server's
	// namespace: no TCP or DNS goes on to the outside. Each of Ports is
	// still a way to the host's service on it, and through that service
	// (a proxy, a proxy's API) perhaps further: an isolated Shell should
	// name only the ports its program needs, not HostPorts' every
	// listener.
	Isolated bool

	// Resolver is the DNS server the program's queries go on to; the
	// zero value means the host's first name server (HostResolvers).
	// Forward ignores it when Isolated.
	Resolver netip.AddrPort

	// Stdin, Stdout and Stderr are the program's, as exec.Cmd's: nil
	// means the null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Signals, if not nil, carries signals for the program: each is
	// passed on to it (RelaySignal) from the moment it starts until Run
	// returns; those that come before it starts wait for it. A SIGTERM or
	// SIGHUP among them is followed by SIGKILL after KillAfter, unless
	// the program has ended. CatchSignals gives the process's own.
	Signals <-chan os.Signal

	// KillAfter is how long the program may take to end after a SIGTERM
	// or SIGHUP from Signals; 0 or less means DefaultKillAfter.
	KillAfter time.Duration
}

// Outside is what lies beyond the server's namespace for a Shell's
// program, as Forward set it up.
type Outside struct {
	// TCP reports whether TCP to addresses other than ServerAddr goes on
	// from the host's namespace (ForwardOutside); false when Isolated.
	TCP bool

	// Resolver is where the program's DNS queries go on to; the zero
	// value means nowhere: Isolated, or no Shell.Resolver and no name
	// server in the host's resolv.conf.
	Resolver netip.AddrPort
}

// Exit is how a Shell's program ended.
type Exit struct {
	// Status is the exit status, as a shell gives it: the program's own,
	// or 128 plus the signal's number when a signal ended it.
	Status int

	// Took is how long Run took, from the program's start to its end.
	Took time.Duration
}

// StartError is a Shell's program that could not start: it was not
// found, or is not executable. Err is the error as exec or the system
// gave it, and Error is its text alone; a shell's status for it is 127.
type StartError struct{ Err error }

// Error is Err's text, unchanged, so that a caller can word it.
func (e *StartError) Error() string { return e.Err.Error() }

// Unwrap returns Err: errors.Is(err, exec.ErrNotFound) holds for a
// program not found in PATH.
func (e *StartError) Unwrap() error { return e.Err }

// HostPorts returns the host's loopback ports a Shell's program should
// reach: those listening on 127.0.0.1 now (LoopbackListeners) and extra,
// in increasing order, each once.
func HostPorts(extra []uint16) ([]uint16, error) {
	host, err := LoopbackListeners()
	if err != nil {
		return nil, err
	}
	return slices.Compact(slices.Sorted(slices.Values(append(host, extra...)))), nil
}

// Forward makes s.Ports on the host's loopback answer at ServerAddr in
// n's server namespace (ForwardHost) and, unless s.Isolated, carries TCP
// and DNS on to the outside (ForwardOutside): DNS goes where the host's
// resolv.conf says (the namespaces share it) and on to s.Resolver or the
// host's first name server. It returns what the program reaches beyond
// the server's namespace. On an error, what was forwarded stays until n
// closes.
func (s Shell) Forward(n *Net) (Outside, error) {
	for _, p := range s.Ports {
		if err := n.ForwardHost(p); err != nil {
			return Outside{}, err
		}
	}
	if s.Isolated {
		return Outside{}, nil
	}
	resolver, loopback, err := HostResolvers()
	if err != nil {
		return Outside{}, err
	}
	if s.Resolver.IsValid() {
		resolver = s.Resolver
	}
	if err := n.ForwardOutside(resolver, loopback); err != nil {
		return Outside{}, err
	}
	return Outside{TCP: true, Resolver: resolver}, nil
}

// Run runs the program in n's client namespace (RunInClient) and waits
// for it, passing s.Signals on to it while it runs. Its environment is
// this process's with NETEMU_SERVER (ServerAddr), NETEMU_CLIENT
// (ClientAddr) and NETEMU_PORTS (s.Ports, space-separated) added. A
// program that ran and ended, however it ended, is an Exit and a nil
// error; one that could not start is a *StartError.
func (s Shell) Run(n *Net) (Exit, error) {
	if len(s.Args) == 0 {
		return Exit{}, errors.New("kernel: Shell.Run needs a program: Args is empty")
	}
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	cmd.Env = append(os.Environ(),
		"NETEMU_SERVER="+ServerAddr.String(),
		"NETEMU_CLIENT="+ClientAddr.String(),
		"NETEMU_PORTS="+portWords(s.Ports))
	started := make(chan *os.Process, 1)
	done := make(chan struct{})
	defer close(done)
	if s.Signals != nil {
		killAfter := s.KillAfter
		if killAfter <= 0 {
			killAfter = DefaultKillAfter
		}
		go relaySignals(s.Signals, started, done, killAfter)
	}
	begin := time.Now()
	err := n.RunInClient(cmd, func(p *os.Process) { started <- p })
	return exitOf(err, time.Since(begin))
}

// exitOf is the Exit of a program that RunInClient ran for took and that
// ended with err, or the error that kept it from running.
func exitOf(err error, took time.Duration) (Exit, error) {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return Exit{Status: 0, Took: took}, nil
	case errors.As(err, &exit):
		code := exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return Exit{Status: code, Took: took}, nil
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission):
		return Exit{Took: took}, &StartError{Err: err}
	}
	return Exit{Took: took}, err
}

// portWords lists ports, space-separated, as NETEMU_PORTS does.
func portWords(ports []uint16) string {
	words := make([]string, len(ports))
	for i, p := range ports {
		words[i] = strconv.Itoa(int(p))
	}
	return strings.Join(words, " ")
}

// CatchSignals makes the ShellSignals this process receives arrive on
// sigs (for Shell.Signals) instead of having their usual effect, until
// stop is called. The program decides what they mean: an interactive
// shell ignores Ctrl-C. sigs holds up to four signals that nobody has
// read; more are dropped, as package signal drops them.
func CatchSignals() (sigs <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, ShellSignals...)
	return ch, func() { signal.Stop(ch) }
}

// relaySignals passes the signals on sigs to the program once started
// says which process it is, until done; a SIGTERM or SIGHUP is followed
// by SIGKILL after killAfter, unless done comes first.
func relaySignals(sigs <-chan os.Signal, started <-chan *os.Process, done <-chan struct{}, killAfter time.Duration) {
	var p *os.Process
	select {
	case p = <-started:
	case <-done:
		return
	}
	var kill <-chan time.Time
	for {
		select {
		case s := <-sigs:
			RelaySignal(p, s)
			if (s == syscall.SIGTERM || s == syscall.SIGHUP) && kill == nil {
				kill = time.After(killAfter)
			}
		case <-kill:
			p.Kill()
		case <-done:
			return
		}
	}
}
