// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"testing"
	"time"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/promtest"
)

// Prometheus is Prometheus' query API on loopback over series a test sets (tests/kit/promtest):
// the queries KEDA sends are evaluated by Prometheus' own PromQL engine, so a test proves that the
// query a ScaledObject carries selects the right pods and gives the right value, not only that
// KEDA acts on a number.
type Prometheus struct {
	*promtest.Server
}

// NewPrometheus serves an empty Prometheus until the test ends.
func NewPrometheus(t *testing.T) *Prometheus {
	t.Helper()
	return &Prometheus{Server: promtest.New(t)}
}

// Set records value for the series named by the labels (__name__ among them), now.
func (p *Prometheus) Set(t *testing.T, series map[string]string, value float64) {
	t.Helper()
	p.Append(t, series, time.Now(), value)
}
