// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// settled is the values of a set of children's outputs, as far as they came: failed[i] when the
// i-th was rejected (its resource's registration failed: a wait that timed out, or the engine
// stopping the deployment), values[i] nil when it failed or had not resolved yet.
type settled struct {
	values []any
	failed []bool
}

// settle is the children's outputs' values once every one has resolved, or, as soon as one is
// rejected, what came so far: the component's outputs that read children's outputs (status,
// routerReady) never reject. A rejected output would fail the component's (and a stack output's)
// RegisterResourceOutputs with a second error beside the child's own ("awaiting input property
// "status": ... context canceled", the other children's registrations cancelled when the
// deployment stops: pulumi sdk/go/pulumi rpc.go marshalInputsOptions, context.go
// RegisterResourceOutputs, run.go); settling at the first failure registers the outputs while the
// engine still takes them. At preview the values may be unknown, so it is pulumi.All.
func settle(ctx *pulumi.Context, outputs []pulumi.Output) pulumi.AnyOutput {
	if ctx.DryRun() {
		inputs := make([]any, len(outputs))
		for i, o := range outputs {
			inputs[i] = o
		}
		return pulumi.All(inputs...).ApplyT(func(values []any) settled {
			return settled{values: values, failed: make([]bool, len(values))}
		}).(pulumi.AnyOutput)
	}
	out, resolve, _ := ctx.NewOutput()
	type result struct {
		i     int
		value any
		err   error
	}
	results := make(chan result, len(outputs))
	for i, o := range outputs {
		go func() {
			value, _, err := awaitOutput(ctx, o)
			results <- result{i, value, err}
		}()
	}
	go func() {
		s := settled{values: make([]any, len(outputs)), failed: make([]bool, len(outputs))}
		for range outputs {
			r := <-results
			if r.err != nil {
				s.failed[r.i] = true
				break
			}
			s.values[r.i] = r.value
		}
		resolve(s)
	}()
	return out.(pulumi.AnyOutput)
}
