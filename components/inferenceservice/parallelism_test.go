// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParallelismHoldsReplicasBack(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		creation, largestBatch int
		parallel               int32
		want                   string
	}{
		{"everything fits", 8, 2, 8, ""},
		{"the engine did not say", 100, 25, 0, ""},
		{"no bound", 100, 25, math.MaxInt32, ""},
		{"the creation does not fit, a batch does", 12, 3, 8, "this deployment runs 8 resource operations at once (pulumi up --parallel, 4 per CPU by default), " +
			"and each replica's creation or update holds one until its LWS is Available: a first deployment creates its 12 replicas 8 at a time. " +
			"Run pulumi up with --parallel 12 or more (or PULUMI_PARALLEL) to wait for them together."},
		{"neither fits", 1000, 250, 8, "this deployment runs 8 resource operations at once (pulumi up --parallel, 4 per CPU by default), " +
			"and each replica's creation or update holds one until its LWS is Available: a first deployment creates its 1000 replicas 8 at a time, " +
			"and a rollout batch of 250 rolls 8 at a time. Run pulumi up with --parallel 1000 or more (or PULUMI_PARALLEL) to wait for them together."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parallelismHoldsReplicasBack(tc.creation, tc.largestBatch, tc.parallel))
		})
	}
}

func TestClientRateHoldsPreviewBack(t *testing.T) {
	for _, tc := range []struct {
		name              string
		objects           int
		settings, fromEnv string
		wantSeconds       string // "" when nothing is said
	}{
		{"one burst", 120, "", "", ""},
		{"more than a burst", 121, "", "", "takes at least 1 s"},
		{"the target service", 1252, "", "", "a preview of this service's 1252 objects as new takes at least 23 s, and their creation as long"},
		{"qps in the stack's configuration", 1252, `{"qps":500,"burst":1000}`, "", ""},
		{"only the burst configured", 1252, `{"burst":1000}`, "", "takes at least 23 s"},
		{"qps in the environment", 1252, "", "500", ""},
		{"configuration that is not JSON", 1252, "qps", "", "takes at least 23 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clientRateHoldsPreviewBack(tc.objects, tc.settings, tc.fromEnv)
			if tc.wantSeconds == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, "the kubernetes provider sends the API server at most 50 requests a second after a burst of 120")
			assert.Contains(t, got, tc.wantSeconds)
			assert.Contains(t, got, "pulumi config set --path kubernetes:kubeClientSettings.qps 500")
		})
	}
}
