// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOnlyALostWebhookConnectionRunsAnUpdateAgain: Up runs an update again only when the API
// server lost its connection to a webhook; a webhook's refusal, or any other failure, fails the test.
func TestOnlyALostWebhookConnectionRunsAnUpdateAgain(t *testing.T) {
	for _, c := range []struct {
		err   string
		again bool
	}{
		// as the e2e suite saw it (tests/e2e/karpenter, 2026-11-30)
		{`BAIL: step executor errored: step application failed: creating LeaderWorkerSet karpenter-warm-prefill-0: Internal error occurred: failed calling webhook "vleaderworkerset.kb.io": failed to call webhook: Post "https://127.0.0.1:38057/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset?timeout=10s": write tcp 127.0.0.1:33948->127.0.0.1:38057: write: broken pipe`, true},
		{`creating LeaderWorkerSet a-0: Internal error occurred: failed calling webhook "mleaderworkerset.kb.io": failed to call webhook: Post "https://127.0.0.1:1/mutate": read tcp 127.0.0.1:2->127.0.0.1:1: read: connection reset by peer`, true},
		{`creating LeaderWorkerSet a-0: admission webhook "vleaderworkerset.kb.io" denied the request: spec.leaderWorkerTemplate.size: Invalid value: 0`, false},
		{`creating LeaderWorkerSet a-0: Internal error occurred: failed calling webhook "vleaderworkerset.kb.io": failed to call webhook: Post "https://127.0.0.1:1/validate": dial tcp 127.0.0.1:1: connect: connection refused`, false},
		{`updating PodGroup p: write tcp 127.0.0.1:2->127.0.0.1:3: write: broken pipe`, false},
	} {
		assert.Equal(t, c.again, webhookConnectionLost(errors.New(c.err)), c.err)
	}
}
