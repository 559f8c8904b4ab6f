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
