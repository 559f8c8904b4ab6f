// SPDX-License-Identifier: Apache-2.0

package render

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// rolloutPlan lays out the LWSs and the router of a service that awaits everything as a chain of
// batches: each LWS of a batch is updated after the batch before (RolloutAfter) and waits for
// its Available condition, so a deployment updates one batch at a time, but creates them all at
// once; the router's stage depends on the last batch before it. Roles follow
// rolloutRoles; a role's replicas go in batches of its RolloutBatchSize, lowest index first;
// the router's stage is its Endpoint Picker Deployment. In a gang-scheduled service the gang's
// minimal set of every role is the first batch (api's RolloutFirstBatch).
func rolloutPlan(svc *api.InferenceService, replicas, elastic map[string][]Ref) []Ref {
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
		for i := range batch {
			batch[i].RolloutAfter = batchNumber - 1
		}
		out = append(out, batch...)
		previous = nil
		for _, ref := range batch {
			previous = append(previous, ref.Suffix)
			awaited = append(awaited, ref.Suffix)
		}
	}
	roles := rolloutRoles(spec)
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
		if refs := elastic[role.Name]; len(refs) > 0 {
			// After the base replicas: it holds none at creation, and LWS rolls its groups itself.
			batchNumber++
			lws := refs[0]
			lws.Awaited, lws.Batch = true, batchNumber
			lws.DependsOn = append(append([]string{}, lws.DependsOn...), previous...)
			out = append(out, lws, refs[1])
			previous = []string{lws.Suffix}
			awaited = append(awaited, lws.Suffix)
		}
	}
	return append(out, entranceRefs(svc, awaited)...)
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

// defaultRolloutOrder is the order of component types a rollout follows for the roles
// spec.rolloutOrder leaves out: decoders first, so prefill keeps every replica until decode is
// done; the router last, once the servers it routes to run the new revision.
var defaultRolloutOrder = []api.ComponentType{api.ComponentTypeDecoder, api.ComponentTypePrefiller, api.ComponentTypeWorker, api.ComponentTypeRouter}

// rolloutRoles are the serving roles and the router in the order a rollout updates them: those
// spec.rolloutOrder names, in its order, then the others by component type (decoders,
// prefillers, workers, router), each type in spec order.
func rolloutRoles(s *api.InferenceServiceSpec) []*api.Role {
	var ordered []*api.Role
	seen := sets.New[string]()
	add := func(role *api.Role) {
		if !seen.Has(role.Name) {
			seen.Insert(role.Name)
			ordered = append(ordered, role)
		}
	}
	for _, name := range s.RolloutOrder {
		if role := s.RoleNamed(name); role != nil {
			add(role)
		}
	}
	for _, componentType := range defaultRolloutOrder {
		for i := range s.Roles {
			if s.Roles[i].ComponentType == componentType {
				add(&s.Roles[i])
			}
		}
	}
	return ordered
}
