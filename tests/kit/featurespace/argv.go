// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"strconv"
	"strings"
)

// argv is a command line read as the programs in a pod read theirs, written here from the rules
// and not with api/vllm's helpers, which the render and validation use: a bug the oracle shared
// with the render could not fail a check (issue 55). The rules are Python argparse's as vLLM
// extends it (vllm/utils/argparse_utils.py, FlexibleArgumentParser.parse_args: a long flag's
// underscores before its first "." read as dashes) and Go's flag and pflag packages' (the
// sidecar's, the pickers', Envoy's): a value is the word after the flag or after its "=", and the
// last occurrence wins.
type argv []string

// flagName is a word's flag as the parser reads it, and the value the word carries after "=".
func flagName(word string) (name, value string, hasValue bool) {
	name, value, hasValue = strings.Cut(word, "=")
	if strings.HasPrefix(name, "--") {
		key, rest, dotted := strings.Cut(name[2:], ".")
		name = "--" + strings.ReplaceAll(key, "_", "-")
		if dotted {
			name += "." + rest
		}
	}
	return name, value, hasValue
}

// values are the values of every occurrence of a flag under any of its names, in order.
func (a argv) values(names ...string) []string {
	var out []string
	for i := 0; i < len(a); i++ {
		name, value, hasValue := flagName(a[i])
		matched := false
		for _, n := range names {
			matched = matched || name == n
		}
		switch {
		case !matched:
		case hasValue:
			out = append(out, value)
		case i+1 < len(a):
			out = append(out, a[i+1])
			i++
		}
	}
	return out
}

// value is the flag's last value under any of its names.
func (a argv) value(names ...string) (string, bool) {
	all := a.values(names...)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// has reports whether a word gives the flag, with a value or without.
func (a argv) has(name string) bool {
	for _, w := range a {
		if n, _, _ := flagName(w); n == name {
			return true
		}
	}
	return false
}

// size is a parallel size flag's value, 1 when it is not given or not a number (validation
// refuses those).
func (a argv) size(names ...string) int64 {
	v, found := a.value(names...)
	n, err := strconv.ParseInt(v, 10, 64)
	if !found || err != nil {
		return 1
	}
	return n
}
