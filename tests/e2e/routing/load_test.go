// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package routing

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// sent is one request of a load: when it was sent and what came back.
type sent struct {
	at   time.Time
	resp response
}

// load keeps workers sending completions through url, each one after the other, at most one
// every interval (a refused request comes back at once), until end.
type load struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	sent []sent
}

// startLoad starts the load; prompt gives the i-th request's prompt.
func startLoad(url string, workers, maxTokens int, interval time.Duration, prompt func(i int) string) *load {
	l := &load{stop: make(chan struct{})}
	var n int
	var next sync.Mutex
	for range workers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				next.Lock()
				i := n
				n++
				next.Unlock()
				at := time.Now()
				resp := complete(url, prompt(i), maxTokens, true)
				l.mu.Lock()
				l.sent = append(l.sent, sent{at: at, resp: resp})
				l.mu.Unlock()
				time.Sleep(time.Until(at.Add(interval)))
			}
		})
	}
	return l
}

// end stops the load, waits for the requests under way and returns every request, in the order
// they were sent.
func (l *load) end() []sent {
	close(l.stop)
	l.wg.Wait()
	slices.SortFunc(l.sent, func(a, b sent) int { return a.at.Compare(b.at) })
	return l.sent
}

// failures are the requests that did not come back whole and 200, described.
func failures(requests []sent) []string {
	var out []string
	for _, s := range requests {
		if s.resp.err != nil || s.resp.status != 200 {
			out = append(out, fmt.Sprintf("%s: %d %v", s.at.Format("15:04:05.000"), s.resp.status, s.resp.err))
		}
	}
	return out
}

// quantile is the q-quantile of durations (nearest rank).
func quantile(durations []time.Duration, q float64) time.Duration {
	if len(durations) == 0 {
		return 0
	}
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
