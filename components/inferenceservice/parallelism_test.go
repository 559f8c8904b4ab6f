// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
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

func TestCheckpointsHoldUpBack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources int
		skip      bool
		want      bool
	}{
		{"a small service", 100, false, false},
		{"one resource more", 101, false, true},
		{"the saves skipped", 2000, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkpointsHoldUpBack(tc.resources, tc.skip)
			if !tc.want {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, fmt.Sprintf("this service is %d resources in the stack", tc.resources))
			assert.Contains(t, got, "PULUMI_SKIP_CHECKPOINTS=true saves the state once, at the end")
		})
	}
}

// The preview's count is what the component registers: one kubernetes resource an object, and a
// rollout besides for each replica rolled in batches (story 4 with 120 decode replicas: a PodGroup,
// 121 LWSs, 121 rollouts). With the saves skipped it says nothing.
func TestPreviewCountsTheResourcesEachCheckpointSaves(t *testing.T) {
	for _, skip := range []string{"", "true"} {
		t.Run("PULUMI_SKIP_CHECKPOINTS="+skip, func(t *testing.T) {
			t.Setenv("PULUMI_SKIP_CHECKPOINTS", skip)
			args := story4Args()
			decoders := 120
			args.Roles[1].Replicas = &decoders
			monitor := &pulumimock.Monitor{}
			require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
				_, err := NewInferenceService(ctx, "deepseek-r1-disagg", args)
				return err
			}, pulumimock.Preview))
			kubernetes := 0
			for _, r := range monitor.Resources() {
				if strings.HasPrefix(r.Type, "kubernetes:") {
					kubernetes++
				}
			}
			require.Equal(t, 243, kubernetes)
			var said []string
			for _, l := range monitor.Logs() {
				if strings.Contains(l.Message, "PULUMI_SKIP_CHECKPOINTS") {
					said = append(said, l.Message)
				}
			}
			if skip == "true" {
				assert.Empty(t, said)
				return
			}
			require.Len(t, said, 1)
			assert.Contains(t, said[0], fmt.Sprintf("this service is %d resources in the stack", kubernetes))
		})
	}
}
