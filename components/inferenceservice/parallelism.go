// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
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

// The kubernetes provider's client sends the API server at most this many requests a second, after
// a burst of clientBurst, unless its kubeClientSettings (or PULUMI_K8S_CLIENT_QPS) say otherwise
// (pulumi-kubernetes provider/pkg/provider/provider.go Configure).
const clientQPS, clientBurst = 50, 120

// clientRateHoldsPreviewBack says, when a service has more objects than the kubernetes provider's
// client sends in one burst and the stack leaves its request rate at the default, that the preview
// waits for the rate: each object's creation is previewed by a server-side dry run, one request
// each, so a preview of n new objects takes at least (n - burst) / qps seconds, whatever the
// machine (measured in docs/performance.md). kubeClientSettings is the stack's
// kubernetes:kubeClientSettings configuration (JSON), qpsFromEnv PULUMI_K8S_CLIENT_QPS. Empty when
// the objects fit in a burst or the rate is set.
func clientRateHoldsPreviewBack(objects int, kubeClientSettings, qpsFromEnv string) string {
	if objects <= clientBurst || qpsFromEnv != "" {
		return ""
	}
	var settings struct {
		QPS *float64 `json:"qps"`
	}
	if json.Unmarshal([]byte(kubeClientSettings), &settings) == nil && settings.QPS != nil {
		return ""
	}
	return fmt.Sprintf("the kubernetes provider sends the API server at most %d requests a second after a burst of %d "+
		"(its kubeClientSettings' defaults), and previewing a new object is one request (a server-side dry run): "+
		"a preview of this service's %d objects as new takes at least %d s, and their creation as long. Raise the rate: "+
		"pulumi config set --path kubernetes:kubeClientSettings.qps 500 and kubernetes:kubeClientSettings.burst 1000 "+
		"(or PULUMI_K8S_CLIENT_QPS and PULUMI_K8S_CLIENT_BURST, or kubeClientSettings on your kubernetes.Provider).",
		clientQPS, clientBurst, objects, (objects-clientBurst+clientQPS-1)/clientQPS)
}

// checkpointedResources is how many of a service's resources in the stack make the local
// backend's saves most of an up: it saves the whole state when each step begins and when it
// ends, and the step waits for both (pkg/v3 backend/snapshot.go doCreate, markOperationPending),
// so the saves grow as the square of the resources. Measured (docs/performance.md, 2 cores, the
// real provider): 64 resources (32 replicas) came up in 15.0 s, 9.8 s with the state saved once;
// 200 (100 replicas) in 82 s against 29 s.
const checkpointedResources = 100

// resourcesInTheStack is how many kubernetes resources the component registers for refs: one an
// object, and a rollout besides for each LWS rolled in batches (registerRolledLeaderWorkerSet).
func resourcesInTheStack(refs []render.Ref) int {
	n := len(refs)
	for _, ref := range refs {
		if ref.RolledInBatches() {
			n++
		}
	}
	return n
}

// checkpointsHoldUpBack says, for a service of more than checkpointedResources resources in the
// stack, that a diy backend's saves after each step will take most of its up, rollout and
// destroy, and what saves them once: PULUMI_SKIP_CHECKPOINTS (the engine's setting, read from the
// program's environment, which the CLI passes on). Empty when the service is smaller or the
// saves are skipped already. The component cannot see the backend: Pulumi Cloud journals each
// step instead.
func checkpointsHoldUpBack(resources int, skipCheckpoints bool) string {
	if resources <= checkpointedResources || skipCheckpoints {
		return ""
	}
	return fmt.Sprintf("this service is %d resources in the stack (a replica rolled in batches is two: its LWS and its rollout). "+
		"A local or bucket backend saves the whole state when each step begins and ends, so its up, rollout and destroy "+
		"spend most of their time saving, growing as the square of the resources (Pulumi Cloud journals each step instead). "+
		"With such a backend, PULUMI_SKIP_CHECKPOINTS=true saves the state once, at the end: an interrupted up then records nothing of what it did.",
		resources)
}
