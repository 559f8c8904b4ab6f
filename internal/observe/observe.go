// SPDX-License-Identifier: Apache-2.0

// Package observe reads what a cluster holds of one InferenceService (client-go, the kubeconfig
// as kubectl finds it) into diagnosis.Observed: `fusioninfer status` and the e2e suite's recorded
// fixtures use it. Its errors are one line that says what to do.
package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
)

// Clients read a cluster. Every read goes through the dynamic client into the typed objects
// diagnosis reads: client-go's typed clientset would link every Kubernetes API group into the CLI.
type Clients struct {
	dynamic dynamic.Interface
	// core is a REST client of the core API group, for what the dynamic client cannot read: a
	// pod's proxy (the LoRA loaders' state).
	core   rest.Interface
	server string
	// Namespace is the kubeconfig context's namespace, "default" when it names none: where
	// kubectl looks for what is given without a namespace.
	Namespace string
}

// NewClients are clients of the cluster a kubeconfig names, found as kubectl finds it when
// kubeconfig is empty.
func NewClients(kubeconfig, kubeContext string, timeout time.Duration) (*Clients, error) {
	if kubeconfig != "" { // given, so not to be asked for again: what is wrong with the one given
		if _, err := os.Stat(kubeconfig); err != nil {
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				err = pathErr.Err
			}
			return nil, fmt.Errorf("no cluster to read: --kubeconfig %s: %v; give the path of a kubeconfig file", kubeconfig, err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	if kubeContext != "" { // client-go says only `context "x" does not exist`; name those that do
		if raw, err := loader.RawConfig(); err == nil && raw.Contexts[kubeContext] == nil {
			if len(raw.Contexts) == 0 {
				return nil, fmt.Errorf("no cluster to read: the kubeconfig has no context %q, nor any other; give a kubeconfig that has one", kubeContext)
			}
			return nil, fmt.Errorf("no cluster to read: the kubeconfig has no context %q; give --context one of its contexts: %s (kubectl config get-contexts)",
				kubeContext, strings.Join(slices.Sorted(maps.Keys(raw.Contexts)), ", "))
		}
	}
	config, err := loader.ClientConfig()
	if clientcmd.IsEmptyConfig(err) { // client-go's own message asks for KUBERNETES_MASTER
		where := fmt.Sprintf("KUBECONFIG is not set and %s does not exist", clientcmd.RecommendedHomeFile)
		if len(rules.Precedence) > 0 && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" { // client-go skips missing files
			where = fmt.Sprintf("KUBECONFIG names %s, and no such file exists", strings.Join(rules.Precedence, ", "))
		}
		return nil, fmt.Errorf("no cluster to read: no kubeconfig found (%s); give --kubeconfig or set KUBECONFIG", where)
	}
	if err != nil {
		return nil, fmt.Errorf("no cluster to read: %v; give --kubeconfig or set KUBECONFIG", firstLine(err.Error()))
	}
	config.Timeout = timeout
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	core, err := coreClient(config)
	if err != nil {
		return nil, err
	}
	namespace, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("no cluster to read: %v; give --kubeconfig or set KUBECONFIG", firstLine(err.Error()))
	}
	return &Clients{dynamic: dyn, core: core, server: config.Host, Namespace: namespace}, nil
}

// coreClient is the core group's REST client as client-go's typed one configures it
// (kubernetes/typed/core/v1/core_client.go, setConfigDefaults), with a codec of the API server's
// Status alone (its errors' messages): it reads raw bytes (a pod's proxy), and links no API group.
func coreClient(config *rest.Config) (rest.Interface, error) {
	statusOnly := runtime.NewScheme()
	metav1.AddToGroupVersion(statusOnly, corev1.SchemeGroupVersion)
	coreConfig := rest.CopyConfig(config)
	coreConfig.APIPath = "/api"
	coreConfig.GroupVersion = &corev1.SchemeGroupVersion
	coreConfig.NegotiatedSerializer = serializer.NewCodecFactory(statusOnly).WithoutConversion()
	return rest.RESTClientFor(coreConfig)
}

// resource is a kind the status reads: its API resource and the typed object it is read into.
type resource struct {
	schema.GroupVersionResource
	object func() runtime.Object
	// provider installs a custom resource's API, for the error when the cluster lacks it.
	provider string
}

// The kinds the status reads.
var (
	pods        = resource{corev1.SchemeGroupVersion.WithResource("pods"), func() runtime.Object { return &corev1.Pod{} }, ""}
	jobs        = resource{batchv1.SchemeGroupVersion.WithResource("jobs"), func() runtime.Object { return &batchv1.Job{} }, ""}
	claims      = resource{corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, ""}
	deployments = resource{appsv1.SchemeGroupVersion.WithResource("deployments"), func() runtime.Object { return &appsv1.Deployment{} }, ""}
	nodes       = resource{corev1.SchemeGroupVersion.WithResource("nodes"), func() runtime.Object { return &corev1.Node{} }, ""}
	events      = resource{corev1.SchemeGroupVersion.WithResource("events"), func() runtime.Object { return &corev1.Event{} }, ""}
	lwss        = resource{lwsv1.GroupVersion.WithResource("leaderworkersets"), func() runtime.Object { return &lwsv1.LeaderWorkerSet{} },
		"LeaderWorkerSet (install LWS)"}
	podGroups = resource{volcanov1beta1.SchemeGroupVersion.WithResource("podgroups"), func() runtime.Object { return &volcanov1beta1.PodGroup{} },
		"Volcano's PodGroup (install Volcano)"}
	httpRoutes = resource{schema.GroupVersion(gatewayv1.GroupVersion).WithResource("httproutes"), func() runtime.Object { return &gatewayv1.HTTPRoute{} },
		"Gateway API's HTTPRoute (install the Gateway API CRDs)"}
	scaledObjects = resource{schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}, func() runtime.Object { return &keda.ScaledObject{} },
		"the service's autoscaled roles need KEDA"}
	nodeClaims = resource{karpenter.KarpenterGroupVersion.WithResource("nodeclaims"), func() runtime.Object { return &karpenter.NodeClaim{} },
		"the service's karpenter node pools need Karpenter v1"}
	nodePools = resource{karpenter.KarpenterGroupVersion.WithResource("nodepools"), func() runtime.Object { return &karpenter.NodePool{} },
		"the service's karpenter node pools need Karpenter v1"}
)

// Service reads what the cluster holds of one service: everything with its label, and the events
// about those objects. svc, the spec, may be nil; with it, an API the service needs and the
// cluster lacks is an error.
func (c *Clients) Service(ctx context.Context, name, namespace string, svc *api.InferenceService) (*diagnosis.Observed, error) {
	selector := metav1.ListOptions{LabelSelector: render.LabelService + "=" + name}
	o := &diagnosis.Observed{}
	for _, r := range []resource{pods, jobs, claims, deployments, lwss, podGroups, httpRoutes, scaledObjects} {
		items, err := c.list(ctx, r, namespace, selector)
		switch {
		case apierrors.IsNotFound(err) && r.provider != "" && !needed(r.GroupVersionResource, svc):
			continue // an API the service does not use
		case err != nil:
			return nil, err
		}
		if err := addAll(o, items); err != nil {
			return nil, err
		}
	}
	if o.Empty() {
		return nil, fmt.Errorf("no InferenceService %q in namespace %q: nothing there carries the label %s=%s (deploy it, or give the right --namespace)",
			name, namespace, render.LabelService, name)
	}
	c.addLoRALoaders(ctx, o, name)
	if routed(o, name, svc) {
		if err := c.addInferenceObjects(ctx, o, namespace); err != nil {
			return nil, err
		}
	}
	if err := c.addNodes(ctx, o); err != nil {
		return nil, err
	}
	if err := c.addKarpenter(ctx, o, name, svc); err != nil {
		return nil, err
	}
	all, err := c.list(ctx, events, namespace, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	involved := involvedNames(o)
	for _, obj := range all {
		if e := obj.(*corev1.Event); involved[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] {
			o.Events = append(o.Events, *e)
		}
	}
	return o, nil
}

// list reads the objects of a kind, typed; its error says what to do.
func (c *Clients) list(ctx context.Context, r resource, namespace string, opts metav1.ListOptions) ([]runtime.Object, error) {
	list, err := c.dynamic.Resource(r.GroupVersionResource).Namespace(namespace).List(ctx, opts)
	if err != nil {
		return nil, c.readError(r, namespace, err)
	}
	out := make([]runtime.Object, 0, len(list.Items))
	for _, item := range list.Items {
		obj := r.object()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, obj); err != nil {
			return nil, fmt.Errorf("cannot read %s %s: %v", r.Resource, item.GetName(), err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// addNodes adds the nodes and, to count the GPUs they have free, the other pods bound to them
// (only what the count reads). Someone who may not list nodes or every namespace's pods gets a
// report without the count.
func (c *Clients) addNodes(ctx context.Context, o *diagnosis.Observed) error {
	all, err := c.list(ctx, nodes, "", metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return err
	}
	bound, err := c.list(ctx, pods, "", metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := addAll(o, all); err != nil {
		return err
	}
	seen := map[types.UID]bool{}
	for _, p := range o.Pods {
		seen[p.UID] = true
	}
	for _, obj := range bound {
		p := obj.(*corev1.Pod)
		if seen[p.UID] {
			continue
		}
		trimmed := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, Status: corev1.PodStatus{Phase: p.Status.Phase}}
		for _, ctr := range p.Spec.Containers {
			trimmed.Spec.Containers = append(trimmed.Spec.Containers, corev1.Container{Name: ctr.Name, Resources: ctr.Resources})
		}
		o.Pods = append(o.Pods, trimmed)
	}
	return nil
}

// addKarpenter adds the NodePools of the service's karpenter pools (those the spec names, else
// those that carry the service's label, when the cluster has Karpenter's API), their claims, and
// Karpenter's events about both (recorded in the default namespace, as events of cluster-scoped
// objects are; skipped when they may not be read).
func (c *Clients) addKarpenter(ctx context.Context, o *diagnosis.Observed, name string, svc *api.InferenceService) error {
	var pools []string
	if svc != nil {
		resolved, errs := api.ResolveShape(svc)
		if len(errs) > 0 {
			return &api.ValidationError{Service: svc.Name, Errors: errs}
		}
		refs, err := render.Plan(svc, resolved)
		if err != nil {
			return err
		}
		for _, ref := range refs {
			if ref.TypeMeta == render.KindNodePool {
				pools = append(pools, ref.Name)
			}
		}
		if len(pools) == 0 {
			return nil
		}
	}
	found, err := c.list(ctx, nodePools, "", metav1.ListOptions{LabelSelector: render.LabelService + "=" + name})
	switch {
	case svc == nil && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)):
		return nil // no Karpenter, or not ours to read: the spec does not say the service needs it
	case err != nil:
		return err
	}
	if err := addAll(o, found); err != nil {
		return err
	}
	if svc == nil {
		for _, p := range o.NodePools {
			pools = append(pools, p.Name)
		}
		if len(pools) == 0 {
			return nil
		}
	}
	found, err = c.list(ctx, nodeClaims, "", metav1.ListOptions{
		LabelSelector: karpenter.NodePoolLabelKey + " in (" + strings.Join(pools, ",") + ")"})
	if err != nil {
		return err
	}
	if err := addAll(o, found); err != nil {
		return err
	}
	karpenterObjects := map[string]bool{}
	for _, p := range o.NodePools {
		karpenterObjects["NodePool/"+p.Name] = true
	}
	for _, nc := range o.NodeClaims {
		karpenterObjects["NodeClaim/"+nc.Name] = true
	}
	all, err := c.list(ctx, events, metav1.NamespaceDefault, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, obj := range all {
		if e := obj.(*corev1.Event); karpenterObjects[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] {
			o.Events = append(o.Events, *e)
		}
	}
	return nil
}

// routed says whether the service has a router: its spec's, or without the spec, an Endpoint
// Picker Deployment of its name among the objects found (its release annotation then says what
// the picker reads, core/diagnosis inferencegroups.go).
func routed(o *diagnosis.Observed, name string, svc *api.InferenceService) bool {
	if svc != nil {
		return svc.Spec.Router() != nil
	}
	return slices.ContainsFunc(o.Deployments, func(d appsv1.Deployment) bool { return d.Name == api.EndpointPickerName(name) })
}

// inferenceKinds are the kinds an Endpoint Picker may watch in either of its API groups.
var inferenceKinds = []struct {
	kind, resource string
	object         func() runtime.Object
}{
	{eppconfig.KindObjective, eppconfig.ResourceObjectives, func() runtime.Object { return &inferencev1alpha2.InferenceObjective{} }},
	{eppconfig.KindModelRewrite, eppconfig.ResourceModelRewrites, func() runtime.Object { return &render.InferenceModelRewrite{} }},
}

// addInferenceObjects adds the namespace's InferenceObjectives and InferenceModelRewrites of
// every API group an Endpoint Picker reads them in, and which groups the cluster serves each kind
// in: a list the API server answers 404 is of a group it does not serve (as an EPP's discovery
// finds it: pkg/epp/server/controller_config.go gvkExists). Someone who may not list one of them
// gets a report without them.
func (c *Clients) addInferenceObjects(ctx context.Context, o *diagnosis.Observed, namespace string) error {
	served := map[string][]string{}
	for _, k := range inferenceKinds {
		for _, group := range diagnosis.InferenceGroups {
			r := resource{schema.GroupVersionResource{Group: group, Version: inferencev1alpha2.GroupVersion.Version, Resource: k.resource}, k.object, ""}
			items, err := c.list(ctx, r, namespace, metav1.ListOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue
			case apierrors.IsForbidden(err):
				return nil
			case err != nil:
				return err
			}
			served[k.kind] = append(served[k.kind], group)
			if err := addAll(o, items); err != nil {
				return err
			}
		}
	}
	o.InferenceGroups = served
	return nil
}

// loaderTimeout bounds the wait for one pod's loader; loaderQueries is how many are asked at once.
const (
	loaderTimeout = 5 * time.Second
	loaderQueries = 8
)

// addLoRALoaders asks the LoRA loader of each of the service's running server pods for its state
// (vllm.PathLoaderState), through the API server's pod proxy, as client-go's ProxyGet does
// (kubernetes/typed/core/v1/pod_expansion.go): the API server dials the pod's address, so this
// works from wherever the kubeconfig does, with the pods/proxy permission kubectl port-forward's
// users have. vLLM's own vllm:lora_requests_info lists only adapters with requests running or
// waiting, not those loaded. A loader that cannot be asked is recorded with why; it fails nothing.
func (c *Clients) addLoRALoaders(ctx context.Context, o *diagnosis.Observed, service string) {
	var asked []corev1.Pod
	for _, p := range o.Pods {
		if p.Labels[render.LabelService] == service && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && diagnosis.RunsLoRALoader(&p) {
			asked = append(asked, p)
		}
	}
	if len(asked) == 0 {
		return
	}
	said := make([]diagnosis.LoRALoader, len(asked))
	queries := make(chan struct{}, loaderQueries)
	var wg sync.WaitGroup
	for i := range asked {
		wg.Go(func() {
			queries <- struct{}{}
			defer func() { <-queries }()
			said[i] = c.loRALoader(ctx, &asked[i])
		})
	}
	wg.Wait()
	o.LoRALoaders = map[string]diagnosis.LoRALoader{}
	for i, p := range asked {
		o.LoRALoaders[p.Name] = said[i]
	}
}

// loRALoader is what one pod's loader says of itself, or why it could not be asked.
func (c *Clients) loRALoader(ctx context.Context, pod *corev1.Pod) diagnosis.LoRALoader {
	ctx, cancel := context.WithTimeout(ctx, loaderTimeout)
	defer cancel()
	port := strconv.Itoa(vllm.LoRALoaderPort)
	result := c.core.Get().Namespace(pod.Namespace).Resource("pods").SubResource("proxy").
		Name(utilnet.JoinSchemeNamePort("", pod.Name, port)).Suffix(vllm.PathLoaderState).Do(ctx)
	body, _ := result.Raw()
	err := result.Error() // the API server's Status, with its message (Raw's error has none)
	switch {
	case apierrors.IsForbidden(err):
		return diagnosis.LoRALoader{Err: fmt.Sprintf("not allowed to get pods/proxy in namespace %q (kubectl auth can-i get pods/proxy -n %s)",
			pod.Namespace, pod.Namespace)}
	case err != nil:
		return diagnosis.LoRALoader{Err: fmt.Sprintf("GET %s on port %s through the API server: %s", vllm.PathLoaderState, port, firstLine(err.Error()))}
	}
	var state vllm.LoaderState
	if err := json.Unmarshal(body, &state); err != nil {
		return diagnosis.LoRALoader{Err: fmt.Sprintf("its answer on port %s is not the loader's state: %v", port, err)}
	}
	return diagnosis.LoRALoader{State: &state}
}

// needed reports whether the service uses an API: always LWS; the PodGroup when gang scheduled
// and the HTTPRoute with a router, when the spec is known.
func needed(gvr schema.GroupVersionResource, svc *api.InferenceService) bool {
	switch {
	case gvr == lwss.GroupVersionResource:
		return true
	case svc == nil:
		return false
	case gvr == podGroups.GroupVersionResource:
		return svc.Spec.GangScheduled()
	case gvr == httpRoutes.GroupVersionResource:
		return svc.Spec.Router() != nil
	case gvr == scaledObjects.GroupVersionResource:
		return slices.ContainsFunc(svc.Spec.Roles, func(r api.Role) bool { return r.Autoscaled() })
	}
	return false
}

// readError says what to do about a failed list; it wraps the API error, so that callers can
// tell a missing API or a forbidden list.
func (c *Clients) readError(r resource, namespace string, err error) error {
	var msg string
	switch {
	case apierrors.IsNotFound(err) && r.provider != "":
		msg = fmt.Sprintf("the cluster at %s has no %s API (%s): %s", c.server, r.Resource, r.GroupVersion(), r.provider)
	case apierrors.IsForbidden(err):
		msg = fmt.Sprintf("not allowed to list %s in namespace %q: the status needs get and list on the service's objects and events "+
			"(kubectl auth can-i list %s -n %s)", r.Resource, namespace, r.Resource, namespace)
	case apierrors.IsUnauthorized(err):
		msg = fmt.Sprintf("the cluster at %s does not accept these credentials: %s", c.server, firstLine(err.Error()))
	default:
		msg = fmt.Sprintf("cannot read %s from the cluster at %s: %s", r.Resource, c.server, firstLine(err.Error()))
	}
	return &listError{msg: msg, err: err}
}

type listError struct {
	msg string
	err error
}

func (e *listError) Error() string { return e.msg }
func (e *listError) Unwrap() error { return e.err }

func addAll(o *diagnosis.Observed, objects []runtime.Object) error {
	for _, obj := range objects {
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
