package topology

import (
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// rolloutPlan lays out the LWSs and the router of a service that awaits everything as a chain of
// batches: each batch depends on every object of the batch before, and each LWS waits for its
// Available condition, so Pulumi updates (and first creates) one batch at a time. Roles follow
// spec.RolloutRoles; a role's replicas go in batches of its RolloutBatchSize, lowest index first;
// the router's stage is its Endpoint Picker Deployment. In a gang-scheduled service the gang's
// minimal set of every role is the first batch (api's RolloutFirstBatch).
func rolloutPlan(svc *api.InferenceService, replicas map[string][]Ref) []Ref {
	spec := &svc.Spec
	var out []Ref
	var previous, awaited []string // suffixes of the batch before, and of every LWS
	batchNumber := 0
	addBatch := func(batch []Ref) {
		batchNumber++
		for i := range batch {
			batch[i].Awaited = true
			batch[i].Batch = batchNumber
		}
		dependOnBatch(batch, previous)
		out = append(out, batch...)
		previous = nil
		for _, ref := range batch {
			previous = append(previous, ref.Suffix)
			awaited = append(awaited, ref.Suffix)
		}
	}
	roles := spec.RolloutRoles()
	first := map[string]int32{} // per role, the first replica not yet in a batch
	var firstBatch []Ref
	for _, role := range roles {
		if role.ComponentType.Serving() {
			first[role.Name] = spec.RolloutFirstBatch(role)
			firstBatch = append(firstBatch, replicas[role.Name][:first[role.Name]]...)
		}
	}
	if len(firstBatch) > 0 {
		addBatch(firstBatch)
	}
	for _, role := range roles {
		if role.ComponentType == api.ComponentTypeRouter {
			router := routerRefs(svc, previous)
			batchNumber++
			for i := range router {
				if router[i].Suffix == suffixEPPDeployment {
					router[i].Batch = batchNumber
				}
			}
			out = append(out, router...)
			previous = []string{suffixEPPDeployment}
			continue
		}
		rest := replicas[role.Name][first[role.Name]:]
		for size := int(role.RolloutBatchSize()); len(rest) > 0; {
			n := min(size, len(rest))
			addBatch(rest[:n])
			rest = rest[n:]
		}
	}
	return append(out, httpRouteRefs(svc, awaited)...)
}

// dependOnBatch adds the batch before to the dependencies of each ref. Refs with the same
// dependencies share one read-only list: a service of a thousand replicas would otherwise hold a
// copy of the batch before for each.
func dependOnBatch(refs []Ref, batchBefore []string) {
	if len(batchBefore) == 0 {
		return
	}
	shared := map[string][]string{}
	for i := range refs {
		key := strings.Join(refs[i].DependsOn, ",")
		if _, ok := shared[key]; !ok {
			shared[key] = append(append([]string{}, refs[i].DependsOn...), batchBefore...)
		}
		refs[i].DependsOn = shared[key]
	}
}
