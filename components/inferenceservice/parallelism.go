package inferenceservice

import (
	"fmt"
	"math"
	"strings"
)

// parallelismHoldsReplicasBack says, when a deployment waits for more replicas together than the
// engine runs resource operations at once, that they go that many at a time: each awaited
// replica's creation or update holds one of the engine's workers until its LWS is Available
// (pkg/v3 resource/deploy/step_executor.go newStepExecutor starts `parallel` workers; `pulumi up`
// runs 4 x GOMAXPROCS by default: cmd/pulumi/operations/up.go defaultParallel). Empty when both
// fit, or when the engine did not say (0) or sets no bound.
func parallelismHoldsReplicasBack(creation, largestBatch int, parallel int32) string {
	p := int(parallel)
	if parallel <= 0 || parallel == math.MaxInt32 || max(creation, largestBatch) <= p {
		return ""
	}
	var held []string
	if creation > p {
		held = append(held, fmt.Sprintf("a first deployment creates its %d replicas %d at a time", creation, p))
	}
	if largestBatch > p {
		held = append(held, fmt.Sprintf("a rollout batch of %d rolls %d at a time", largestBatch, p))
	}
	return fmt.Sprintf("this deployment runs %d resource operations at once (pulumi up --parallel, 4 per CPU by default), "+
		"and each replica's creation or update holds one until its LWS is Available: %s. "+
		"Run pulumi up with --parallel %d or more (or PULUMI_PARALLEL) to wait for them together.",
		p, strings.Join(held, ", and "), max(creation, largestBatch))
}
