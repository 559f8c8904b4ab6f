// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"strings"
)

// RolloutBarrier is the end of one batch of a rollout: what the batch after it waits for. It is
// no Kubernetes object. A deployment realises it as one resource that depends on every object of
// the batch and on which every object of the next batch depends, so the chain of batches costs
// one dependency per object instead of the whole batch before per object: a thousand replicas in
// 25% batches name 1,500 dependencies rather than 187,500
// (docs/design/0038-state-linear-in-the-replicas.md). Barrier 0 ends the creation of the rolled
// replicas: the first batch waits at it, so that no replica is waited for before every replica
// is created and loading its model (docs/design/0040-every-replica-loads-before-any-wait.md).
type RolloutBarrier struct {
	// Batch is the number of the batch it ends (Ref.Batch), from 1; 0 for the creation.
	Batch int
	// Suffix names the barrier relative to the service, as Ref.Suffix names an object; it ends in
	// "-done", which no object's suffix does.
	Suffix string
	// Members are the suffixes of the batch's objects, in plan order: its replicas' LWSs, or the
	// router's Endpoint Picker Deployment, or an elastic LWS; for barrier 0, every replica's LWS
	// rolled in batches (Ref.RolledInBatches).
	Members []string
	// Description names the batch by its roles' replica ranges (RolloutBatches), as the
	// preview's rollout line does; barrier 0's is "created: " and every role's range.
	Description string
}

// RolloutBarrierSuffix is the suffix of the barrier that ends the given batch.
func RolloutBarrierSuffix(batch int) string { return fmt.Sprintf("batch-%d-done", batch) }

// RolloutBarriers are the barriers a plan's rollout waits at, in batch order: barrier 0 when a
// replica is rolled in batches, and one for each batch that an object's RolloutAfter names.
func RolloutBarriers(refs []Ref) []RolloutBarrier {
	var out []RolloutBarrier
	if created, ok := creationBarrier(refs); ok {
		out = append(out, created)
	}
	needed := map[int]bool{}
	for _, r := range refs {
		if r.RolloutAfter > 0 {
			needed[r.RolloutAfter] = true
		}
	}
	if len(needed) == 0 {
		return out
	}
	descriptions := RolloutBatches(refs)
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

// creationBarrier is barrier 0: every LWS rolled in batches, named by each role's range of
// replicas (a role's rolled replicas are its base replicas, 0 to n-1).
func creationBarrier(refs []Ref) (RolloutBarrier, bool) {
	created := RolloutBarrier{Suffix: RolloutBarrierSuffix(0)}
	var roles []string
	last := map[string]int32{}
	for _, r := range refs {
		if !r.RolledInBatches() {
			continue
		}
		created.Members = append(created.Members, r.Suffix)
		if _, seen := last[r.Role]; !seen {
			roles = append(roles, r.Role)
		}
		last[r.Role] = max(last[r.Role], r.Replica)
	}
	if len(created.Members) == 0 {
		return RolloutBarrier{}, false
	}
	ranges := make([]string, len(roles))
	for i, role := range roles {
		ranges[i] = fmt.Sprintf("%s 0-%d", role, last[role])
		if last[role] == 0 {
			ranges[i] = role + " 0"
		}
	}
	created.Description = "created: " + strings.Join(ranges, " + ")
	return created, true
}
