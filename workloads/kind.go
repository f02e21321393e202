package workloads

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netemu/netemu/link/tc"
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
	return orList(names)
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

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
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
		return nil, fmt.Errorf("--%s %q: want %s", name, *v, orList(words))
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
