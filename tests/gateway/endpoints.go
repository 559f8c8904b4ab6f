// SPDX-License-Identifier: Apache-2.0

package gateway

import (
	"net"
	"slices"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// ReadyEndpoints are host:port, sorted, of the Ready endpoints of a Service's port (by name) in
// its EndpointSlices: where kube-proxy sends a new connection. An endpoint of unknown readiness
// (nil) counts as Ready, as discovery/v1 EndpointConditions asks consumers to take it; a
// terminating one does not. Slices of other Services are skipped.
func ReadyEndpoints(endpointSlices []*discoveryv1.EndpointSlice, namespace, service, portName string) []string {
	var out []string
	for _, slice := range endpointSlices {
		if slice.Namespace != namespace || slice.Labels[discoveryv1.LabelServiceName] != service {
			continue
		}
		var target *int32
		for _, p := range slice.Ports {
			if p.Name != nil && *p.Name == portName {
				target = p.Port
			}
		}
		if target == nil {
			continue
		}
		for _, e := range slice.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			terminating := e.Conditions.Terminating != nil && *e.Conditions.Terminating
			if ready && !terminating && len(e.Addresses) > 0 {
				out = append(out, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*target))))
			}
		}
	}
	slices.Sort(out)
	return out
}

// Pointers are the addresses of a list's items, for ReadyEndpoints.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
