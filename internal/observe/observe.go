// Package observe reads what a cluster holds of one InferenceService (client-go, the kubeconfig
// as kubectl finds it) into diagnosis.Observed: `fusioninfer status` and the e2e suite's recorded
// fixtures use it. Its errors are one line that says what to do.
package observe

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	karpenter "sigs.k8s.io/karpenter/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
)

// Clients read a cluster.
type Clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	server  string
}

// NewClients are clients of the cluster a kubeconfig names, found as kubectl finds it when
// kubeconfig is empty.
func NewClients(kubeconfig, kubeContext string, timeout time.Duration) (*Clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to read: %v; give --kubeconfig or set KUBECONFIG", firstLine(err.Error()))
	}
	config.Timeout = timeout
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &Clients{kube: kube, dynamic: dyn, server: config.Host}, nil
}

// The custom resources the status reads, and what provides them.
var (
	lwsResource       = lwsv1.GroupVersion.WithResource("leaderworkersets")
	podGroupResource  = volcanov1beta1.SchemeGroupVersion.WithResource("podgroups")
	httpRouteResource = gatewayv1.SchemeGroupVersion.WithResource("httproutes")
	providers         = map[schema.GroupVersionResource]string{
		lwsResource:       "LeaderWorkerSet (install LWS)",
		podGroupResource:  "Volcano's PodGroup (install Volcano)",
		httpRouteResource: "Gateway API's HTTPRoute (install the Gateway API CRDs)",
	}
)

// Service reads what the cluster holds of one service: everything with its label, and the events
// about those objects. svc, the spec, may be nil; with it, an API the service needs and the
// cluster lacks is an error.
func (c *Clients) Service(ctx context.Context, name, namespace string, svc *api.InferenceService) (*diagnosis.Observed, error) {
	selector := metav1.ListOptions{LabelSelector: topology.LabelService + "=" + name}
	o := &diagnosis.Observed{}
	kube := c.kube
	lists := []struct {
		what string
		list func() (runtime.Object, error)
	}{
		{"pods", func() (runtime.Object, error) { return kube.CoreV1().Pods(namespace).List(ctx, selector) }},
		{"jobs", func() (runtime.Object, error) { return kube.BatchV1().Jobs(namespace).List(ctx, selector) }},
		{"persistentvolumeclaims", func() (runtime.Object, error) {
			return kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, selector)
		}},
		{"deployments", func() (runtime.Object, error) { return kube.AppsV1().Deployments(namespace).List(ctx, selector) }},
	}
	for _, l := range lists {
		list, err := l.list()
		if err != nil {
			return nil, c.readError(l.what, namespace, err)
		}
		if err := addItems(o, list); err != nil {
			return nil, err
		}
	}
	for _, gvr := range []schema.GroupVersionResource{lwsResource, podGroupResource, httpRouteResource} {
		list, err := c.dynamic.Resource(gvr).Namespace(namespace).List(ctx, selector)
		switch {
		case apierrors.IsNotFound(err) && !needed(gvr, svc):
			continue // an API the service does not use
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("the cluster at %s has no %s API (%s): %s", c.server, gvr.Resource, gvr.GroupVersion(), providers[gvr])
		case err != nil:
			return nil, c.readError(gvr.Resource, namespace, err)
		}
		if err := addTyped(o, gvr, list.Items); err != nil {
			return nil, err
		}
	}
	if o.Empty() {
		return nil, fmt.Errorf("no InferenceService %q in namespace %q: nothing there carries the label %s=%s (deploy it, or give the right --namespace)",
			name, namespace, topology.LabelService, name)
	}
	if err := c.addNodes(ctx, o); err != nil {
		return nil, err
	}
	if err := c.addNodeClaims(ctx, o, svc); err != nil {
		return nil, err
	}
	events, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, c.readError("events", namespace, err)
	}
	involved := involvedNames(o)
	for _, e := range events.Items {
		if involved[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] {
			o.Events = append(o.Events, e)
		}
	}
	return o, nil
}

// addNodes adds the nodes and, to count the GPUs they have free, the other pods bound to them
// (only what the count reads). Someone who may not list nodes or every namespace's pods gets a
// report without the count.
func (c *Clients) addNodes(ctx context.Context, o *diagnosis.Observed) error {
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return c.readError("nodes", "", err)
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return c.readError("pods", "", err)
	}
	o.Nodes = append(o.Nodes, nodes.Items...)
	seen := map[types.UID]bool{}
	for _, p := range o.Pods {
		seen[p.UID] = true
	}
	for _, p := range pods.Items {
		if seen[p.UID] {
			continue
		}
		bound := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, Status: corev1.PodStatus{Phase: p.Status.Phase}}
		for _, ctr := range p.Spec.Containers {
			bound.Spec.Containers = append(bound.Spec.Containers, corev1.Container{Name: ctr.Name, Resources: ctr.Resources})
		}
		o.Pods = append(o.Pods, bound)
	}
	return nil
}

// nodeClaimResource is Karpenter's NodeClaim.
var nodeClaimResource = schema.GroupVersionResource{Group: karpenter.Group, Version: "v1", Resource: "nodeclaims"}

// addNodeClaims adds Karpenter's claims for the service's karpenter pools (known from the spec).
func (c *Clients) addNodeClaims(ctx context.Context, o *diagnosis.Observed, svc *api.InferenceService) error {
	if svc == nil {
		return nil
	}
	var pools []string
	for _, ref := range topology.Plan(svc) {
		if ref.TypeMeta == topology.KindNodePool {
			pools = append(pools, ref.Name)
		}
	}
	if len(pools) == 0 {
		return nil
	}
	list, err := c.dynamic.Resource(nodeClaimResource).List(ctx, metav1.ListOptions{
		LabelSelector: karpv1.NodePoolLabelKey + " in (" + strings.Join(pools, ",") + ")"})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the cluster at %s has no nodeclaims API (karpenter.sh/v1): the service's karpenter node pools need Karpenter v1", c.server)
	case err != nil:
		return c.readError("nodeclaims", "", err)
	}
	return addTyped(o, nodeClaimResource, list.Items)
}

// needed reports whether the service uses an API: always LWS; the PodGroup when gang scheduled
// and the HTTPRoute with a router, when the spec is known.
func needed(gvr schema.GroupVersionResource, svc *api.InferenceService) bool {
	switch {
	case gvr == lwsResource:
		return true
	case svc == nil:
		return false
	case gvr == podGroupResource:
		return svc.Spec.GangScheduled()
	case gvr == httpRouteResource:
		return svc.Spec.Router() != nil
	}
	return false
}

func (c *Clients) readError(what, namespace string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to list %s in namespace %q: the status needs get and list on the service's objects and events "+
			"(kubectl auth can-i list %s -n %s)", what, namespace, what, namespace)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster at %s does not accept these credentials: %s", c.server, firstLine(err.Error()))
	}
	return fmt.Errorf("cannot read %s from the cluster at %s: %s", what, c.server, firstLine(err.Error()))
}

func addItems(o *diagnosis.Observed, list runtime.Object) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		if err := o.Add(item); err != nil {
			return err
		}
	}
	return nil
}

// addTyped adds custom resources read as unstructured objects, as their typed objects.
func addTyped(o *diagnosis.Observed, gvr schema.GroupVersionResource, items []unstructured.Unstructured) error {
	for _, item := range items {
		var obj runtime.Object
		switch gvr {
		case lwsResource:
			obj = &lwsv1.LeaderWorkerSet{}
		case podGroupResource:
			obj = &volcanov1beta1.PodGroup{}
		case httpRouteResource:
			obj = &gatewayv1.HTTPRoute{}
		case nodeClaimResource:
			obj = &karpv1.NodeClaim{}
		default:
			return fmt.Errorf("internal error: no type for %s", gvr)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, obj); err != nil {
			return err
		}
		if err := o.Add(obj); err != nil {
			return err
		}
	}
	return nil
}

// involvedNames are "Kind/name" of every object observed, to pick their events.
func involvedNames(o *diagnosis.Observed) map[string]bool {
	names := map[string]bool{}
	for _, p := range o.Pods {
		names["Pod/"+p.Name] = true
	}
	for _, pg := range o.PodGroups {
		names["PodGroup/"+pg.Name] = true
	}
	for _, c := range o.Claims {
		names["PersistentVolumeClaim/"+c.Name] = true
	}
	for _, j := range o.Jobs {
		names["Job/"+j.Name] = true
	}
	for _, l := range o.LeaderWorkerSets {
		names["LeaderWorkerSet/"+l.Name] = true
	}
	return names
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
