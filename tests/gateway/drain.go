// SPDX-License-Identifier: Apache-2.0

package gateway

import "time"

// Drain starts the graceful drain of the gateway's listener as Envoy's admin
// POST /drain_listeners?graceful starts it with --drain-strategy immediate (Envoy's docs,
// intro/arch_overview/operations/draining, and operations/cli --drain-strategy): at once every
// client is asked to close its connection (an HTTP/1.1 response carries Connection: close, and a
// connection closes once its response in flight has ended), new connections are still accepted
// until drainTime has passed, and then the listener is closed; requests in flight go on until the
// process ends. A drainTime of zero closes the listener at once (drain_listeners without
// graceful).
func (g *Gateway) Drain(drainTime time.Duration) {
	g.server.SetKeepAlivesEnabled(false)
	time.AfterFunc(drainTime, func() { _ = g.listener.Close() })
}
