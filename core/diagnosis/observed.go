// SPDX-License-Identifier: Apache-2.0

// Package diagnosis explains, from what a cluster holds of a service at one moment, whether it
// runs and, when it does not, the first cause that holds each replica back, in plain words, with
// the object to look at and a fix. It reads objects and does no I/O: `fusioninfer status` reads
// them from the cluster, the tests from recorded fixtures (docs/design/0016-status-from-the-cluster.md).
package diagnosis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
)

// Observed is what the cluster holds of one service: the objects that carry its label, the events
// about them, and the nodes with the pods bound to them (to count free GPUs).
type Observed struct {
	Nodes            []corev1.Node
	LeaderWorkerSets []lwsv1.LeaderWorkerSet
	Pods             []corev1.Pod
	PodGroups        []volcanov1beta1.PodGroup
	Jobs             []batchv1.Job
	Claims           []corev1.PersistentVolumeClaim
	Deployments      []appsv1.Deployment
	HTTPRoutes       []gatewayv1.HTTPRoute
	Events           []corev1.Event
	// ScaledObjects are KEDA's, of the service's autoscaled roles, with KEDA's status.
	ScaledObjects []keda.ScaledObject
	// NodePools are the Karpenter NodePools of the service's karpenter pools, with their status;
	// NodeClaims are Karpenter's claims for them.
	NodePools  []karpenter.NodePool
	NodeClaims []karpenter.NodeClaim
	// LoRALoaders are what the LoRA loader of each running server pod said, by pod name: read
	// from the loaders, not objects of the cluster, so fixtures do not record them.
	LoRALoaders map[string]LoRALoader
	// Metrics are the load of the running servers, from a Prometheus or the pods' own /metrics;
	// nil when not read. Read from the servers, not objects of the cluster, like LoRALoaders.
	Metrics *Metrics
	// InferenceObjectives and InferenceModelRewrites are those of the service's namespace in
	// every API group an Endpoint Picker reads them in (their apiVersion says which; the Go types
	// are the same in both: llm-d-router v0.10.0's apix/v1alpha2 copies GIE's).
	InferenceObjectives    []inferencev1alpha2.InferenceObjective
	InferenceModelRewrites []render.InferenceModelRewrite
	// InferenceGroups are, by kind (eppconfig.KindObjective, KindModelRewrite), the API groups
	// the cluster serves it in; nil when not known (fixtures do not record it).
	InferenceGroups map[string][]string
}

// Empty reports whether nothing of the service was found.
func (o *Observed) Empty() bool {
	return len(o.LeaderWorkerSets)+len(o.Pods)+len(o.PodGroups)+len(o.Jobs)+len(o.Claims)+len(o.Deployments)+len(o.HTTPRoutes) == 0
}

// readScheme knows the kinds of Observed, to read fixtures; built once, on first use.
var readScheme = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		lwsv1.AddToScheme, volcanov1beta1.AddToScheme, gatewayv1.Install} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	for _, group := range InferenceGroups {
		s.AddKnownTypes(schema.GroupVersion{Group: group, Version: inferencev1alpha2.GroupVersion.Version},
			&inferencev1alpha2.InferenceObjective{}, &render.InferenceModelRewrite{})
	}
	s.AddKnownTypes(karpenter.KarpenterGroupVersion, &karpenter.NodeClaim{}, &karpenter.NodeClaimList{}, &karpenter.NodePool{}, &karpenter.NodePoolList{})
	return s, nil
})

// Add files an object under its kind.
func (o *Observed) Add(obj runtime.Object) error {
	switch t := obj.(type) {
	case *lwsv1.LeaderWorkerSet:
		o.LeaderWorkerSets = append(o.LeaderWorkerSets, *t)
	case *corev1.Pod:
		o.Pods = append(o.Pods, *t)
	case *volcanov1beta1.PodGroup:
		o.PodGroups = append(o.PodGroups, *t)
	case *batchv1.Job:
		o.Jobs = append(o.Jobs, *t)
	case *corev1.PersistentVolumeClaim:
		o.Claims = append(o.Claims, *t)
	case *appsv1.Deployment:
		o.Deployments = append(o.Deployments, *t)
	case *gatewayv1.HTTPRoute:
		o.HTTPRoutes = append(o.HTTPRoutes, *t)
	case *corev1.Event:
		o.Events = append(o.Events, *t)
	case *corev1.Node:
		o.Nodes = append(o.Nodes, *t)
	case *keda.ScaledObject:
		o.ScaledObjects = append(o.ScaledObjects, *t)
	case *karpenter.NodeClaim:
		o.NodeClaims = append(o.NodeClaims, *t)
	case *karpenter.NodePool:
		o.NodePools = append(o.NodePools, *t)
	case *inferencev1alpha2.InferenceObjective:
		o.InferenceObjectives = append(o.InferenceObjectives, *t)
	case *render.InferenceModelRewrite:
		o.InferenceModelRewrites = append(o.InferenceModelRewrites, *t)
	default:
		return fmt.Errorf("diagnosis does not read %T", obj)
	}
	return nil
}

// ReadObserved reads a recorded cluster state: YAML documents of the kinds of Observed.
func ReadObserved(data []byte) (*Observed, error) {
	scheme, err := readScheme()
	if err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	out := &Observed{}
	for {
		doc, err := reader.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		if err := out.Add(obj); err != nil {
			return nil, err
		}
	}
}

// YAML writes the state as YAML documents, to record a fixture.
func (o *Observed) YAML() ([]byte, error) {
	var docs []string
	add := func(apiVersion, kind string, obj any) error {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(data, &m); err != nil {
			return err
		}
		m["apiVersion"], m["kind"] = apiVersion, kind
		meta, _ := m["metadata"].(map[string]any)
		delete(meta, "managedFields")
		out, err := yaml.Marshal(m)
		docs = append(docs, string(out))
		return err
	}
	for _, group := range []struct {
		apiVersion, kind string
		items            []any
	}{
		{"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", items(o.LeaderWorkerSets)},
		{"v1", "Pod", items(o.Pods)},
		{"scheduling.volcano.sh/v1beta1", "PodGroup", items(o.PodGroups)},
		{"batch/v1", "Job", items(o.Jobs)},
		{"v1", "PersistentVolumeClaim", items(o.Claims)},
		{"apps/v1", "Deployment", items(o.Deployments)},
		{"gateway.networking.k8s.io/v1", "HTTPRoute", items(o.HTTPRoutes)},
		{"v1", "Event", items(o.Events)},
		{"v1", "Node", items(o.Nodes)},
		{karpenter.KarpenterGroupVersion.String(), "NodePool", items(o.NodePools)},
		{karpenter.KarpenterGroupVersion.String(), "NodeClaim", items(o.NodeClaims)},
	} {
		for _, item := range group.items {
			if err := add(group.apiVersion, group.kind, item); err != nil {
				return nil, err
			}
		}
	}
	for _, obj := range o.InferenceObjectives {
		if err := add(obj.APIVersion, obj.Kind, &obj); err != nil {
			return nil, err
		}
	}
	for _, obj := range o.InferenceModelRewrites {
		if err := add(obj.APIVersion, obj.Kind, &obj); err != nil {
			return nil, err
		}
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

func items[T any](list []T) []any {
	out := make([]any, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out
}
