// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// rolloutBarriers registers the core's rollout barriers (render.RolloutBarriers), each as a Pulumi
// Stash (`pulumi:index:Stash`, the engine's built-in resource that keeps a value in the state:
// pkg/v3 resource/deploy/builtins.go; no provider plugin, no Kubernetes object), parented to the
// component, depending on every object of its batch and holding the batch's description.
//
// It holds the next batch back as the batch's objects would: the Go SDK sends a registration only
// once its dependencies' URNs are known (sdk/v3 go/pulumi context.go prepareResourceInputs,
// rpc.go expandDependencies), and the engine answers a custom resource's registration when its
// step is done, so the barrier is registered after the batch is Available and the next batch's
// rollouts after the barrier. A Stash is a custom resource, so a dependency on it is recorded as
// its one URN; a component would be expanded to its children, or to nothing
// (rpc.go addDependency). docs/design/0038-state-linear-in-the-replicas.md.
type rolloutBarriers struct {
	ctx        *pulumi.Context
	name       string // the component's
	component  *InferenceService
	barriers   map[int]render.RolloutBarrier
	registered map[int]*pulumi.Stash
}

func newRolloutBarriers(ctx *pulumi.Context, name string, component *InferenceService, refs []render.Ref) *rolloutBarriers {
	b := &rolloutBarriers{ctx: ctx, name: name, component: component, barriers: map[int]render.RolloutBarrier{}, registered: map[int]*pulumi.Stash{}}
	for _, barrier := range render.RolloutBarriers(refs) {
		b.barriers[barrier.Batch] = barrier
	}
	return b
}

// after is the barrier of the given batch, registered on first use: every object of the batch
// comes before the first object that waits for it in the plan, so its members are registered.
func (b *rolloutBarriers) after(batch int, resolve func([]string) ([]pulumi.Resource, error)) (pulumi.Resource, error) {
	if stash, ok := b.registered[batch]; ok {
		return stash, nil
	}
	barrier, ok := b.barriers[batch]
	if !ok {
		return nil, fmt.Errorf("internal error: no rollout barrier for batch %d", batch)
	}
	members, err := resolve(barrier.Members)
	if err != nil {
		return nil, err
	}
	stash, err := pulumi.NewStash(b.ctx, b.name+"-"+barrier.Suffix, &pulumi.StashArgs{Input: pulumi.String(barrier.Description)},
		pulumi.Parent(b.component), pulumi.DependsOn(members))
	if err != nil {
		return nil, err
	}
	b.registered[batch] = stash
	return stash, nil
}
