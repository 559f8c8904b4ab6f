// SPDX-License-Identifier: Apache-2.0

package render

import "fmt"

// RolloutBarrier is the end of one batch of a rollout: what the batch after it waits for. It is
// no Kubernetes object. A deployment realises it as one resource that depends on every object of
// the batch and on which every object of the next batch depends, so the chain of batches costs
// one dependency per object instead of the whole batch before per object: a thousand replicas in
// 25% batches name 1,500 dependencies rather than 187,500
// (docs/design/0038-state-linear-in-the-replicas.md).
type RolloutBarrier struct {
	// Batch is the number of the batch it ends (Ref.Batch), from 1.
	Batch int
	// Suffix names the barrier relative to the service, as Ref.Suffix names an object; it ends in
	// "-done", which no object's suffix does.
	Suffix string
	// Members are the suffixes of the batch's objects, in plan order: its replicas' LWSs, or the
	// router's Endpoint Picker Deployment, or an elastic LWS.
	Members []string
	// Description names the batch by its roles' replica ranges (RolloutBatches), as the
	// preview's rollout line does.
	Description string
}

// RolloutBarrierSuffix is the suffix of the barrier that ends the given batch.
func RolloutBarrierSuffix(batch int) string { return fmt.Sprintf("batch-%d-done", batch) }

// RolloutBarriers are the barriers a plan's rollout waits at: one for each batch that an object's
// RolloutAfter names, in batch order.
func RolloutBarriers(refs []Ref) []RolloutBarrier {
	needed := map[int]bool{}
	for _, r := range refs {
		if r.RolloutAfter > 0 {
			needed[r.RolloutAfter] = true
		}
	}
	if len(needed) == 0 {
		return nil
	}
	descriptions := RolloutBatches(refs)
	var out []RolloutBarrier
	index := map[int]int{}
	for _, r := range refs {
		if r.Batch == 0 || !needed[r.Batch] {
			continue
		}
		i, ok := index[r.Batch]
		if !ok {
			i = len(out)
			index[r.Batch] = i
			out = append(out, RolloutBarrier{Batch: r.Batch, Suffix: RolloutBarrierSuffix(r.Batch), Description: descriptions[r.Batch-1]})
		}
		out[i].Members = append(out[i].Members, r.Suffix)
	}
	return out
}
