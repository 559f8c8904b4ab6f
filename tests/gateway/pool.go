// SPDX-License-Identifier: Apache-2.0

package gateway

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
)

// The gateway tracks its InferencePool's endpoints itself (GIE's implementer's guide, option 2):
// the pods the pool's selector matches that are Ready, on the pool's target port, which it picks
// from when the EPP fails and the pool says FailOpen; and the EPP's endpoints, the Ready
// endpoints of the Service the pool's endpointPickerRef names (as Envoy learns a cluster's
// endpoints from EDS), on the Service port the ref names.

// InferencePools is the resource of inference.networking.k8s.io/v1 InferencePools.
var InferencePools = schema.GroupVersionResource{Group: inferencev1.GroupVersion.Group, Version: inferencev1.GroupVersion.Version, Resource: "inferencepools"}

// defaultEPPPort is the EPP's port when the pool names none (the API's default, 9002).
const defaultEPPPort = 9002

// poolState is what the gateway knows of its pool at one time.
type poolState struct {
	pool *inferencev1.InferencePool
	// endpoints are the Ready pods' ip:port, the gateway's own choice when the EPP fails open.
	endpoints []string
	// epp are the EPP's ready endpoints, ip:port.
	epp []string
	// fixedFailOpen is the failure mode of a gateway with a fixed EPP (Options.EPP).
	fixedFailOpen bool
}

// failOpen says whether the pool lets the gateway route when its EPP fails.
func (s *poolState) failOpen() bool {
	return s.fixedFailOpen || s.pool != nil && s.pool.Spec.EndpointPickerRef.FailureMode == inferencev1.EndpointPickerFailOpen
}

// failureMode is the pool's failure mode as it is written, FailClose when unset (the API's default).
func (s *poolState) failureMode() string {
	if s.failOpen() {
		return string(inferencev1.EndpointPickerFailOpen)
	}
	return string(inferencev1.EndpointPickerFailClose)
}

// tracker computes the pool's state from its informers' stores whenever one of them changes.
type tracker struct {
	namespace, name string
	pools, pods     cache.Store
	services        cache.Store
	slices          cache.Store
	onChange        func(poolState)

	mu    sync.RWMutex
	state poolState
}

func (t *tracker) current() poolState {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.state
}

func (t *tracker) refresh() {
	state := poolState{}
	if obj, ok, _ := t.pools.GetByKey(t.namespace + "/" + t.name); ok {
		pool := &inferencev1.InferencePool{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, pool); err == nil {
			state.pool = pool
			state.endpoints = t.readyPods(pool)
			state.epp = t.eppEndpoints(pool)
		}
	}
	t.mu.Lock()
	t.state = state
	t.mu.Unlock()
	t.onChange(state)
}

// readyPods are the pool's Ready pods, ip:port on its first target port.
func (t *tracker) readyPods(pool *inferencev1.InferencePool) []string {
	if len(pool.Spec.TargetPorts) == 0 {
		return nil
	}
	set := labels.Set{}
	for k, v := range pool.Spec.Selector.MatchLabels {
		set[string(k)] = string(v)
	}
	selector := labels.SelectorFromSet(set)
	port := strconv.Itoa(int(pool.Spec.TargetPorts[0].Number))
	var out []string
	for _, obj := range t.pods.List() {
		pod := obj.(*corev1.Pod)
		if pod.Namespace != pool.Namespace || !selector.Matches(labels.Set(pod.Labels)) || pod.DeletionTimestamp != nil || pod.Status.PodIP == "" || !rolestatus.PodReady(pod) {
			continue
		}
		out = append(out, net.JoinHostPort(pod.Status.PodIP, port))
	}
	slices.Sort(out)
	return out
}

// eppEndpoints are the ready endpoints of the EPP's Service on the port the pool names.
func (t *tracker) eppEndpoints(pool *inferencev1.InferencePool) []string {
	ref := pool.Spec.EndpointPickerRef
	if ref.Kind != "" && ref.Kind != "Service" {
		return nil
	}
	port := int32(defaultEPPPort)
	if ref.Port != nil {
		port = int32(ref.Port.Number)
	}
	obj, ok, _ := t.services.GetByKey(pool.Namespace + "/" + string(ref.Name))
	if !ok {
		return nil
	}
	portName := ""
	found := false
	for _, p := range obj.(*corev1.Service).Spec.Ports {
		if p.Port == port {
			portName, found = p.Name, true
		}
	}
	if !found {
		return nil
	}
	var endpointSlices []*discoveryv1.EndpointSlice
	for _, obj := range t.slices.List() {
		endpointSlices = append(endpointSlices, obj.(*discoveryv1.EndpointSlice))
	}
	return ReadyEndpoints(endpointSlices, pool.Namespace, string(ref.Name), portName)
}

// String is the state for logs.
func (s poolState) String() string {
	return fmt.Sprintf("pool endpoints %v, EPP %v, %s", s.endpoints, s.epp, s.failureMode())
}
