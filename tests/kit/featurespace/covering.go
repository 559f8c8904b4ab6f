// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"pgregory.net/rapid"
)

// A Tuple is the values of Strength features of different dimensions: Dims ascending, Values
// theirs (the first Strength of each array are used).
type Tuple struct {
	Strength int
	Dims     [maxStrength]int
	Values   [maxStrength]int
}

// maxStrength is the most features a covering array combines: pairs, and triples where pairs
// miss a class (issue 55: a sidecar's rank ports undeclared showed only with three features).
const maxStrength = 3

func (t Tuple) String() string {
	parts := make([]string, t.Strength)
	for i := range t.Strength {
		parts[i] = Dimensions[t.Dims[i]].Name + "=" + Dimensions[t.Dims[i]].Values[t.Values[i]]
	}
	return strings.Join(parts, " with ")
}

// AllTuples are every combination of values of strength different dimensions.
func AllTuples(strength int) []Tuple {
	return tuplesOf(strength, func(d int) []int {
		values := make([]int, len(Dimensions[d].Values))
		for v := range values {
			values[v] = v
		}
		return values
	})
}

// tuples are the tuples of strength a combination covers: one for each choice of dimensions.
func (f Features) tuples(strength int) []Tuple {
	return tuplesOf(strength, func(d int) []int { return []int{f[d]} })
}

// tuplesOf are the tuples of strength dimensions, each dimension d with a value of values(d).
func tuplesOf(strength int, values func(d int) []int) []Tuple {
	var out []Tuple
	var walk func(t Tuple, from int)
	walk = func(t Tuple, from int) {
		if t.Strength == strength {
			out = append(out, t)
			return
		}
		for d := from; d < len(Dimensions); d++ {
			for _, v := range values(d) {
				next := t
				next.Dims[t.Strength], next.Values[t.Strength] = d, v
				next.Strength++
				walk(next, d+1)
			}
		}
	}
	walk(Tuple{}, 0)
	return out
}

// within reports whether every feature of the smaller tuple s is one of t's.
func (s Tuple) within(t Tuple) bool {
	for i := range s.Strength {
		found := false
		for j := range t.Strength {
			found = found || (s.Dims[i] == t.Dims[j] && s.Values[i] == t.Values[j])
		}
		if !found {
			return false
		}
	}
	return true
}

// CoveringArray is a set of valid feature combinations in which every tuple of strength features
// (2: every pair; 3: every triple) that any valid service can combine appears: a covering array
// of that strength, built greedily as AETG does: for each tuple not yet covered, of tries random
// combinations that hold it (each other feature left out at even odds), the valid one covering
// the most uncovered tuples joins the array. Unreachable are the tuples no try made valid, each
// with what validation said of the last try; a triple that holds an unreachable pair is
// unreachable without a try.
func CoveringArray(strength int, seed uint64, tries int, valid func(Features) error) (rows []Features, unreachable map[Tuple]error) {
	rng := rand.New(rand.NewPCG(seed, 42))
	unreachable = map[Tuple]error{}
	var unreachablePairs []Tuple
	if strength > 2 {
		_, pairs := CoveringArray(2, seed, tries, valid)
		for p := range pairs {
			unreachablePairs = append(unreachablePairs, p)
		}
	}
	uncovered := map[Tuple]bool{}
	all := AllTuples(strength)
	for _, t := range all {
		uncovered[t] = true
	}
	for _, t := range all {
		if !uncovered[t] {
			continue
		}
		if i := slices.IndexFunc(unreachablePairs, func(p Tuple) bool { return p.within(t) }); i >= 0 {
			unreachable[t] = fmt.Errorf("it holds %s, which no valid service combines", unreachablePairs[i])
			delete(uncovered, t)
			continue
		}
		var best Features
		bestGain := 0
		var lastErr error
		for range tries {
			f := make(Features, len(Dimensions))
			for d := range Dimensions {
				if rng.IntN(2) == 0 { // half the features left out: most combine with anything
					f[d] = rng.IntN(len(Dimensions[d].Values))
				}
			}
			for i := range t.Strength {
				f[t.Dims[i]] = t.Values[i]
			}
			if err := valid(f); err != nil {
				lastErr = err
				continue
			}
			gain := 0
			for _, q := range f.tuples(strength) {
				if uncovered[q] {
					gain++
				}
			}
			if gain > bestGain {
				best, bestGain = f, gain
			}
		}
		if best == nil {
			unreachable[t] = lastErr
			delete(uncovered, t)
			continue
		}
		rows = append(rows, best)
		for _, q := range best.tuples(strength) {
			delete(uncovered, q)
		}
	}
	return rows, unreachable
}

// Draw is a random combination of features, for rapid: each feature left out at even odds (most
// features combine with anything, so most draws are valid), else one of its values; rapid shrinks
// a failing combination towards the features left out. A feature that only exists on another is
// drawn only with it: adapters are of spec.model (not of a model the arguments name), dual pods
// are a worker role's.
func Draw(t *rapid.T) Features {
	f := make(Features, len(Dimensions))
	for d, dim := range Dimensions {
		if needs, ok := drawnOnlyWith[dim.Name]; ok && f.Value(needs.dimension) == needs.without {
			continue
		}
		if rapid.Bool().Draw(t, dim.Name+" set") {
			f[d] = rapid.IntRange(1, len(dim.Values)-1).Draw(t, dim.Name)
		}
	}
	return f
}

// drawnOnlyWith: a feature Draw leaves out when an earlier dimension has a value.
var drawnOnlyWith = map[string]struct{ dimension, without string }{
	"adapters": {"model", "args"},
	"dualPods": {"topology", "prefill-decode"},
}
