// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"fmt"
	"math/rand/v2"

	"pgregory.net/rapid"
)

// A Pair is two features' values: dimensions I < J, values A of I and B of J.
type Pair struct{ I, A, J, B int }

func (p Pair) String() string {
	return fmt.Sprintf("%s=%s with %s=%s", Dimensions[p.I].Name, Dimensions[p.I].Values[p.A], Dimensions[p.J].Name, Dimensions[p.J].Values[p.B])
}

// AllPairs are every pair of values of two different dimensions.
func AllPairs() []Pair {
	var out []Pair
	for i := range Dimensions {
		for j := i + 1; j < len(Dimensions); j++ {
			for a := range Dimensions[i].Values {
				for b := range Dimensions[j].Values {
					out = append(out, Pair{i, a, j, b})
				}
			}
		}
	}
	return out
}

func (f Features) covers(p Pair) bool { return f[p.I] == p.A && f[p.J] == p.B }

// CoveringArray is a set of valid feature combinations in which every pair of features that any
// valid service can combine appears (a covering array of strength 2, built greedily as AETG
// does): for each pair not yet covered, of tries random combinations that hold it (each other
// feature left out at even odds), the valid one covering the most uncovered pairs joins the array. Unreachable are the pairs no try made valid,
// each with what validation said of the last try.
func CoveringArray(seed uint64, tries int, valid func(Features) error) (rows []Features, unreachable map[Pair]error) {
	rng := rand.New(rand.NewPCG(seed, 42))
	uncovered := map[Pair]bool{}
	pairs := AllPairs()
	for _, p := range pairs {
		uncovered[p] = true
	}
	unreachable = map[Pair]error{}
	for _, p := range pairs {
		if !uncovered[p] {
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
			f[p.I], f[p.J] = p.A, p.B
			if err := valid(f); err != nil {
				lastErr = err
				continue
			}
			gain := 0
			for q := range uncovered {
				if f.covers(q) {
					gain++
				}
			}
			if gain > bestGain {
				best, bestGain = f, gain
			}
		}
		if best == nil {
			unreachable[p] = lastErr
			delete(uncovered, p)
			continue
		}
		rows = append(rows, best)
		for q := range uncovered {
			if best.covers(q) {
				delete(uncovered, q)
			}
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
