// SPDX-License-Identifier: Apache-2.0

package gateway

import (
	"net/http"
	"time"
)

// Drain starts the graceful drain of the gateway's listener as Envoy's admin
// POST /drain_listeners?graceful starts it with --drain-strategy immediate (Envoy's docs,
// intro/arch_overview/operations/draining, and operations/cli --drain-strategy): from now on
// every response asks its client to close the connection (HTTP/1.1 Connection: close; a stream
// already answering ends as it would, and its connection's next request is told), new connections
// are still accepted until drainTime has passed, and then the listener is closed; connections
// already open go on until the process ends. Idle connections are not closed under their clients,
// which would race with a request being sent on them. A drainTime of zero closes the listener at
// once (drain_listeners without graceful).
func (g *Gateway) Drain(drainTime time.Duration) {
	g.draining.Store(true)
	time.AfterFunc(drainTime, func() { _ = g.listener.Close() })
}

// askToCloseWhileDraining asks the client to close its connection after this response, while the
// gateway drains (Go's server closes a connection whose response says Connection: close).
func (g *Gateway) askToCloseWhileDraining(h http.Header) {
	if g.draining.Load() {
		h.Set("Connection", "close")
	}
}
