package workloads

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/internal/english"
	"github.com/netemu/netemu/link/tc"
	"github.com/netemu/netemu/workloads/web"
)

// A Kind is a workload as the command line knows it: its name, its flags
// and the published cells it reproduces. Each workload file defines one;
// registry.go lists them.
type Kind struct {
	Name  string
	About string // one line for help

	// Flags defines the kind's flags on fs, with their defaults, and
	// returns the function that, once fs is parsed, builds the workloads
	// they describe: several when a flag asks for variants (--mode both).
	// Its errors name the flag and the accepted form.
	Flags func(fs *flag.FlagSet) (build func() ([]Workload, error))

	// Headline names the figure results are judged by when it is not the
	// whole run ("median round"; see Headliner). "" means elapsed time.
	Headline string

	// Details says the result is more than one figure (each flow's
	// goodput, a fairness index): compare prints each backend's Summary
	// under the table.
	Details bool

	// References are the published cells of the kind, in table order.
	References []Reference

	// Lossy are the kind's cells on lossy links, in table order.
	Lossy []Cell
}

// Kinds returns every registered kind, in registry order.
func Kinds() []Kind { return registry }

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range registry {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names lists the kinds' names for messages: "page, bulk, keepalive or nagle".
func Names() string {
	var names []string
	for _, k := range registry {
		names = append(names, k.Name)
	}
	return english.Or(names...)
}

// References returns every kind's reference cells, in registry and table
// order.
func References() []Reference {
	var refs []Reference
	for _, k := range registry {
		refs = append(refs, k.References...)
	}
	return refs
}

// positive defines an integer flag that must be 1 or more.
func positive(fs *flag.FlagSet, name string, def int, help string) func() (int, error) {
	v := fs.Int(name, def, help)
	return func() (int, error) {
		if *v <= 0 {
			return 0, fmt.Errorf("--%s %d: want 1 or more", name, *v)
		}
		return *v, nil
	}
}

// size defines a byte-count flag written as people write sizes (120KB,
// 5MiB); min is the least accepted value.
func size(fs *flag.FlagSet, name string, def, min int, example, help string) func() (int, error) {
	v := fs.String(name, tc.FormatSize(int64(def)), help)
	return func() (int, error) {
		n, err := tc.ParseSize(*v)
		if err != nil {
			return 0, fmt.Errorf("--%s: %v", name, err)
		}
		if n < int64(min) {
			return 0, fmt.Errorf("--%s %s: want %d bytes or more, like %s", name, *v, min, example)
		}
		if n > 1<<40 {
			return 0, fmt.Errorf("--%s %s: want at most 1TiB", name, *v)
		}
		return int(n), nil
	}
}

// variants defines a flag that picks one of values, or "both" of two.
func variants[T ~string](fs *flag.FlagSet, name string, def string, help string, values ...T) func() ([]T, error) {
	v := fs.String(name, def, help)
	return func() ([]T, error) {
		if *v == "both" && len(values) == 2 {
			return values, nil
		}
		var words []string
		for _, a := range values {
			if string(a) == *v {
				return []T{a}, nil
			}
			words = append(words, string(a))
		}
		if len(values) == 2 {
			words = append(words, "both")
		}
		return nil, fmt.Errorf("--%s %q: want %s", name, *v, english.Or(words...))
	}
}

// boolVariants defines a flag that is true, false or both.
func boolVariants(fs *flag.FlagSet, name string, def string, help string) func() ([]bool, error) {
	pick := variants(fs, name, def, help, "false", "true")
	return func() ([]bool, error) {
		words, err := pick()
		var out []bool
		for _, w := range words {
			b, _ := strconv.ParseBool(w)
			out = append(out, b)
		}
		return out, err
	}
}

// duration defines a duration flag of at least min; example shows the
// form in messages.
func duration(fs *flag.FlagSet, name string, def, min time.Duration, example, help string) func() (time.Duration, error) {
	v := fs.String(name, def.String(), help)
	return func() (time.Duration, error) {
		d, err := time.ParseDuration(*v)
		if err != nil {
			return 0, fmt.Errorf("--%s %q is not a duration; write it like %s", name, *v, example)
		}
		if d < min {
			return 0, fmt.Errorf("--%s %s: want %v or more, like %s", name, *v, min, example)
		}
		if d > time.Hour {
			return 0, fmt.Errorf("--%s %s: want at most 1h", name, *v)
		}
		return d, nil
	}
}

// The help of the HTTP workloads' --dns and --timings.
const (
	dnsHelp     = "look the server's name up on a DNS server on the server host first, once (as a browser's host cache): true, false or both"
	timingsHelp = "record each request's timings (DNS, connect, TLS, sent, first and last byte) in JSON records"
)

// protoFlags defines --proto and --tls, each one value or a
// comma-separated list, and returns the function that reads them as the
// protocol and TLS version pairs they expand to, protocols varying
// slowest. A protocol without TLS appears once whatever --tls lists; one
// over TLS takes each version listed that it runs.
func protoFlags(fs *flag.FlagSet) func() ([]web.Config, error) {
	names := web.Names()
	protos := listOf(fs, "proto", string(web.DefaultProto), "HTTP protocol: "+english.Or(names...)+" (TLS: h1s, h2; QUIC: h3, with --clock real), or a list: h1,h2", names...)
	versions := listOf(fs, "tls", string(web.DefaultTLS), "TLS version of h1s and h2: 1.2 or 1.3, or a list: 1.2,1.3 (h3: 1.3)", string(web.TLS12), string(web.TLS13))
	return func() ([]web.Config, error) {
		ps, err := protos()
		if err != nil {
			return nil, err
		}
		vs, err := versions()
		if err != nil {
			return nil, err
		}
		if isSet(fs, "tls") && !slices.ContainsFunc(ps, func(p string) bool { return web.Proto(p).Secure() }) {
			return nil, fmt.Errorf("--tls %s: no protocol listed runs over TLS; add --proto h1s or h2", strings.Join(vs, ","))
		}
		var out []web.Config
		for _, name := range ps {
			p := web.Proto(name).Protocol()
			runs := p.TLSVersions()
			if len(runs) == 0 {
				out = append(out, web.Config{Proto: p.Name()})
				continue
			}
			n := len(out)
			for _, v := range vs {
				if slices.Contains(runs, web.TLSVersion(v)) {
					out = append(out, web.Config{Proto: p.Name(), TLS: web.TLSVersion(v)})
				}
			}
			if len(out) == n {
				var only []string
				for _, v := range runs {
					only = append(only, string(v))
				}
				return nil, fmt.Errorf("--proto %s --tls %s: %s runs TLS %s only; want --tls %s (or a list with it)", name, strings.Join(vs, ","), name, english.Or(only...), english.Or(only...))
			}
		}
		return out, nil
	}
}

// listOf defines a flag that takes one of values or a comma-separated
// list of them, each at most once.
func listOf(fs *flag.FlagSet, name, def, help string, values ...string) func() ([]string, error) {
	v := fs.String(name, def, help)
	return func() ([]string, error) {
		var out []string
		seen := map[string]bool{}
		for _, w := range strings.Split(*v, ",") {
			w = strings.TrimSpace(w)
			if !slices.Contains(values, w) {
				return nil, fmt.Errorf("--%s %q: want %s, or a comma-separated list of them", name, w, english.Or(values...))
			}
			if seen[w] {
				return nil, fmt.Errorf("--%s %q: %s is listed twice", name, *v, w)
			}
			seen[w] = true
			out = append(out, w)
		}
		return out, nil
	}
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
