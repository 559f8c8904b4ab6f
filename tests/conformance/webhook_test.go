// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/lws/pkg/webhooks"
)

// exampleLeaderWorkerSets are the typed LWSs of every example manifest.
func exampleLeaderWorkerSets(t *testing.T) []*lwsv1.LeaderWorkerSet {
	t.Helper()
	var out []*lwsv1.LeaderWorkerSet
	for _, trees := range exampleTrees(t) {
		for _, tree := range trees {
			for _, o := range tree.Objects {
				if lws, ok := o.Object.(*lwsv1.LeaderWorkerSet); ok {
					out = append(out, lws)
				}
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestLeaderWorkerSetWebhookAcceptsEveryLWS runs LWS's own admission code, which a cluster runs
// and a CRD cannot: its defaulting must change nothing we emit (or Pulumi would see drift), and
// its validation must pass.
func TestLeaderWorkerSetWebhookAcceptsEveryLWS(t *testing.T) {
	ctx := context.Background()
	webhook := &webhooks.LeaderWorkerSetWebhook{}
	for _, lws := range exampleLeaderWorkerSets(t) {
		defaulted := lws.DeepCopy()
		require.NoError(t, webhook.Default(ctx, defaulted))
		assert.Equal(t, lws, defaulted, "the webhook's defaults change nothing in %s", lws.Name)
		_, err := webhook.ValidateCreate(ctx, defaulted)
		assert.NoError(t, err, "%s passes the webhook", lws.Name)
		_, err = webhook.ValidateUpdate(ctx, defaulted, defaulted.DeepCopy())
		assert.NoError(t, err, "%s can be re-applied", lws.Name)
	}
}

// TestLeaderWorkerSetWebhookCanRefuse is the webhook check's negative control.
func TestLeaderWorkerSetWebhookCanRefuse(t *testing.T) {
	lws := exampleLeaderWorkerSets(t)[0].DeepCopy()
	lws.Spec.RolloutStrategy.RollingUpdateConfiguration.MaxUnavailable = intstr.FromInt32(-1)
	_, err := (&webhooks.LeaderWorkerSetWebhook{}).ValidateCreate(context.Background(), lws)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "maxUnavailable")
}
