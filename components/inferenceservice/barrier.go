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
//
// Barrier 0 ends the creation: its members are the rolled replicas' LWS resources, which are
// created without a wait, and the first batch's rollouts, which wait, depend on it. So every
// replica is created, and loading its model, before the engine runs any wait, and a wait holds
// one of the engine's workers only while a model that is already loading finishes
// (docs/design/0040-every-replica-loads-before-any-wait.md). Its members are all registered only
// after the plan's last rolled replica, so the first batch's rollouts name it through an output
// that resolves once it is registered (registerCreated).
type rolloutBarriers struct {
	ctx        *pulumi.Context
	name       string // the component's
	component  *InferenceService
	barriers   map[int]render.RolloutBarrier
	registered map[int]*pulumi.Stash

	created []pulumi.Resource // barrier 0's members, as registered
	// createdBarrier resolves to barrier 0 once it is registered: a first-batch rollout's
	// DependsOnInputs, which holds it until every replica is created.
	createdBarrier pulumi.ResourceArrayOutput
	resolveCreated func(any)
	failCreated    func(error)
}

func newRolloutBarriers(ctx *pulumi.Context, name string, component *InferenceService, refs []render.Ref) *rolloutBarriers {
	b := &rolloutBarriers{ctx: ctx, name: name, component: component, barriers: map[int]render.RolloutBarrier{}, registered: map[int]*pulumi.Stash{}}
	for _, barrier := range render.RolloutBarriers(refs) {
		b.barriers[barrier.Batch] = barrier
	}
	promise, resolve, fail := ctx.NewOutput()
	b.createdBarrier = promise.ApplyT(func(v any) []pulumi.Resource { return v.([]pulumi.Resource) }).(pulumi.ResourceArrayOutput)
	b.resolveCreated, b.failCreated = resolve, fail
	return b
}

// wasCreated records a rolled replica's LWS resource, a member of barrier 0.
func (b *rolloutBarriers) wasCreated(lws pulumi.Resource) { b.created = append(b.created, lws) }

// registerCreated registers barrier 0 once every rolled replica's LWS is, and hands it to the
// rollouts waiting for it; err, when the component failed before, fails them instead, so no
// registration waits for it forever.
func (b *rolloutBarriers) registerCreated(err error) error {
	barrier, ok := b.barriers[0]
	switch {
	case err != nil:
		b.failCreated(err)
		return err
	case !ok:
		b.resolveCreated([]pulumi.Resource(nil))
		return nil
	case len(b.created) != len(barrier.Members):
		err := fmt.Errorf("internal error: %d of barrier 0's %d members registered", len(b.created), len(barrier.Members))
		b.failCreated(err)
		return err
	}
	stash, err := pulumi.NewStash(b.ctx, b.name+"-"+barrier.Suffix, &pulumi.StashArgs{Input: pulumi.String(barrier.Description)},
		pulumi.Parent(b.component), pulumi.DependsOn(b.created))
	if err != nil {
		b.failCreated(err)
		return err
	}
	b.registered[0] = stash
	b.resolveCreated([]pulumi.Resource{stash})
	return nil
}

// after is the barrier of the given batch (from 1), registered on first use: every object of the
// batch comes before the first object that waits for it in the plan, so its members are
// registered.
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
