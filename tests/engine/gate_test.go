// SPDX-License-Identifier: Apache-2.0

package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// gate orders the fake cluster's awaited LWS writes (a replica loading its model) by events, not
// by clocks: it holds each write until every write of its expected batch has started, so a batch
// the engine runs together is seen together, and records a violation when a write of another
// batch starts first, or when a batch never runs together (the engine ran its writes one after
// another). Every start and end takes the next number of one sequence: the order of events.
type gate struct {
	mu         sync.Mutex
	seq        int
	batches    [][]string // expected, in order
	next       int        // the batch now running
	entered    int        // writes of batch next that started
	left       int        // ... and ended
	open       chan struct{}
	violations []string
}

// waitForBatch is how long a write waits for the rest of its batch before the gate says the
// engine did not run the batch together. Far above the engine's scheduling jitter: it only bounds
// a failing test.
const waitForBatch = 30 * time.Second

// expect sets the batches the next deployment's awaited writes must come in; nil lets every
// write through at once.
func (g *gate) expect(batches [][]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.batches, g.next, g.entered, g.left, g.open = batches, 0, 0, 0, make(chan struct{})
}

// tick is the next number of the event sequence.
func (g *gate) tick() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	return g.seq
}

// enter starts the write of name and returns when its batch may load: when every write of the
// batch has started.
func (g *gate) enter(name string) (start int) {
	g.mu.Lock()
	g.seq++
	start = g.seq
	if g.batches == nil {
		g.mu.Unlock()
		return start
	}
	batch := slices.IndexFunc(g.batches, func(b []string) bool { return slices.Contains(b, name) })
	if batch != g.next {
		g.violations = append(g.violations, fmt.Sprintf("%s (batch %d) started while batch %d %v was running", name, batch, g.next, g.current()))
		g.mu.Unlock()
		return start
	}
	g.entered++
	if g.entered == len(g.batches[batch]) {
		close(g.open)
	}
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-time.After(waitForBatch):
		g.mu.Lock()
		g.violations = append(g.violations, fmt.Sprintf("batch %d %v never ran together: only %d started", batch, g.batches[batch], g.entered))
		g.mu.Unlock()
	}
	return start
}

// leave ends the write of name; the last of a batch lets the next batch start.
func (g *gate) leave(name string) (end int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	if g.batches != nil && g.next < len(g.batches) && slices.Contains(g.batches[g.next], name) {
		g.left++
		if g.left == len(g.batches[g.next]) {
			g.next++
			g.entered, g.left, g.open = 0, 0, make(chan struct{})
		}
	}
	return g.seq
}

func (g *gate) current() []string {
	if g.next < len(g.batches) {
		return g.batches[g.next]
	}
	return nil
}

// problems are the violations, and the batches that never ran.
func (g *gate) problems() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := append([]string{}, g.violations...)
	if g.batches != nil && g.next < len(g.batches) {
		out = append(out, fmt.Sprintf("batches %v never ran", g.batches[g.next:]))
	}
	return out
}
