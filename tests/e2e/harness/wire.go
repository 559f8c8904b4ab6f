// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/kubeprovider"
)

// wire is a stand-in for the pulumi-kubernetes provider (v4.32.0; the module proxy refuses it at
// every version): the engine's "kubernetes" plugin in these tests. It does what that provider does
// on the wire, and no more, so that what the suite proves is our plan, our objects and the real
// controllers' behaviour. What it mirrors, and from where, is the table in docs/e2e.md; the rules
// that need no cluster (the type token's group, version and kind, Check, the state it returns,
// Diff) are mirror/kubeprovider's, held to the real provider's recorded answers. Here:
//   - check: kubeprovider.Check (refuses a type token the provider cannot read);
//   - diff: kubeprovider.Diff of the stored state against the new inputs;
//   - create: POST with the field manager "pulumi-kubernetes" (a Patch resource: server-side
//     apply); update: server-side apply with the resource's own field manager, which takes the
//     creation's fields over, and for a Patch resource forced only with pulumi.com/patchForce
//     (pulumi-kubernetes provider/pkg/await/await.go, Creation and Update); the object's group,
//     version and kind are the type token's (kubeprovider.ObjectGVK), never only the inputs';
//   - then wait as provider/pkg/await/awaiters.go does: nothing with pulumi.com/skipAwait;
//     pulumi.com/waitFor "condition=X[=status]" as condition/kubectl.go checkCondition (a
//     condition older than metadata.generation does not count), "jsonpath={.path}[=value]" as
//     condition/jsonpath.go; Deployments until their new
//     ReplicaSet is available (deployment.go); Jobs until Complete, failing on Failed
//     (checker/job); Services with a selector until their Endpoints have an address (service.go);
//     PersistentVolumeClaims until Bound, or Pending with a WaitForFirstConsumer class (awaiters.go);
//     for pulumi.com/timeoutSeconds, else 10 minutes (metadata/overrides.go TimeoutDuration);
//     an apply that leaves metadata.generation as it was returns the object as it was before the
//     apply when that one already satisfies the wait (the informer's stale object, which
//     condition/observer.go ObjectObserver.Observe keeps: the real provider's worst case);
//   - the state Create, Update and Read return: kubeprovider.Checkpoint of the inputs and the live
//     object (Read: the live object cut to the old inputs' shape as the new inputs, provider.go Read);
//   - delete: foreground propagation, then wait until the object is gone (await.go Deletion); a
//     Patch resource relinquishes its fields instead.
type wire struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

func newWire(config *rest.Config) (*wire, error) {
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	return &wire{dynamic: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}, nil
}

func (w *wire) provider() *deploytest.Provider {
	return &deploytest.Provider{
		CheckF: func(_ context.Context, req plugin.CheckRequest) (plugin.CheckResponse, error) {
			checked, err := kubeprovider.Check(req.URN, req.News)
			return plugin.CheckResponse{Properties: checked}, err
		},
		DiffF: func(_ context.Context, req plugin.DiffRequest) (plugin.DiffResult, error) {
			return kubeprovider.Diff(req.URN, req.OldOutputs, req.NewInputs, req.IgnoreChanges, w.namespaced(kubeprovider.Unstructured(req.NewInputs)))
		},
		CreateF: func(ctx context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
			if req.Preview { // provider.go Create: a Patch, or inputs not yet known, preview as given
				return plugin.CreateResponse{Properties: req.Properties, Status: resource.StatusOK}, nil
			}
			obj, err := objectOf(req.URN, req.Properties)
			if err != nil {
				return plugin.CreateResponse{Status: resource.StatusUnknown}, err
			}
			manager := fieldManager(req.URN, obj, nil)
			live, err := w.write(ctx, req.URN, obj, manager, req.Timeout, false)
			if err != nil {
				return plugin.CreateResponse{Status: resource.StatusUnknown}, err
			}
			return plugin.CreateResponse{ID: resource.ID(live.GetNamespace() + "/" + live.GetName()),
				Properties: kubeprovider.Checkpoint(obj, live, obj.GetAPIVersion(), manager), Status: resource.StatusOK}, nil
		},
		UpdateF: func(ctx context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
			if req.Preview {
				return plugin.UpdateResponse{Properties: req.NewInputs, Status: resource.StatusOK}, nil
			}
			obj, err := objectOf(req.URN, req.NewInputs)
			if err != nil {
				return plugin.UpdateResponse{Status: resource.StatusUnknown}, err
			}
			manager := fieldManager(req.URN, obj, req.OldOutputs)
			if err := w.keepIgnoredFields(ctx, obj, manager, req.IgnoreChanges); err != nil {
				return plugin.UpdateResponse{Status: resource.StatusUnknown}, err
			}
			live, err := w.write(ctx, req.URN, obj, manager, req.Timeout, true)
			if err != nil {
				return plugin.UpdateResponse{Status: resource.StatusUnknown}, err
			}
			return plugin.UpdateResponse{Properties: kubeprovider.Checkpoint(obj, live, kubeprovider.InitialAPIVersion(req.OldOutputs, obj), manager),
				Status: resource.StatusOK}, nil
		},
		ReadF: func(ctx context.Context, req plugin.ReadRequest) (plugin.ReadResponse, error) {
			// refresh (provider.go Read): the live object, and as inputs the live values of the
			// inputs' fields; none when it is gone
			oldInputs, err := objectOf(req.URN, req.Inputs)
			if err != nil {
				return plugin.ReadResponse{}, err
			}
			client, err := w.client(oldInputs)
			if err != nil {
				return plugin.ReadResponse{}, err
			}
			live, err := client.Get(ctx, oldInputs.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return plugin.ReadResponse{ReadResult: plugin.ReadResult{}, Status: resource.StatusOK}, nil
			}
			if err != nil {
				return plugin.ReadResponse{}, err
			}
			inputs, state := kubeprovider.Refreshed(req.Inputs, live, req.State, fieldManager(req.URN, oldInputs, req.State))
			return plugin.ReadResponse{ReadResult: plugin.ReadResult{ID: req.ID, Inputs: inputs, Outputs: state}, Status: resource.StatusOK}, nil
		},
		DeleteF: func(ctx context.Context, req plugin.DeleteRequest) (plugin.DeleteResponse, error) {
			obj, err := objectOf(req.URN, req.Inputs)
			if err != nil {
				return plugin.DeleteResponse{}, err
			}
			return plugin.DeleteResponse{}, w.delete(ctx, req.URN, obj, fieldManager(req.URN, obj, req.Outputs), req.Timeout)
		},
	}
}

// objectOf is the object a resource's inputs describe, normalised as the provider's Check leaves
// them; its group, version and kind must be the ones the provider reads from the type token
// (kubeprovider.ObjectGVK), or the stand-in refuses it: the provider would not write what the
// inputs say.
func objectOf(urn resource.URN, inputs resource.PropertyMap) (*unstructured.Unstructured, error) {
	obj := kubeprovider.Unstructured(inputs)
	gvk, err := kubeprovider.ObjectGVK(urn, obj.GetKind())
	if err != nil {
		return nil, err
	}
	if gvk != obj.GroupVersionKind() {
		return nil, fmt.Errorf("%s: the type token names %s, the inputs %s", urn.Name(), gvk, obj.GroupVersionKind())
	}
	return obj, nil
}

// isPatch is pulumi-kubernetes' kinds.IsPatchResource.
func isPatch(urn resource.URN, obj *unstructured.Unstructured) bool {
	return kubeprovider.IsPatchResource(urn, obj.GetKind())
}

// fieldManager is provider.go fieldManagerName: pulumi.com/patchFieldManager, else the one in the
// resource's state, else a new one, "pulumi-kubernetes-" and 8 characters (random there; from the
// URN here, so runs repeat).
func fieldManager(urn resource.URN, obj *unstructured.Unstructured, state resource.PropertyMap) string {
	if name := obj.GetAnnotations()["pulumi.com/patchFieldManager"]; name != "" {
		return name
	}
	if v, ok := state["__fieldManager"]; ok && v.IsString() {
		return v.StringValue()
	}
	sum := sha256.Sum256([]byte(urn))
	return "pulumi-kubernetes-" + hex.EncodeToString(sum[:4])
}

// namespaced says whether the object's kind is namespaced; an unknown kind is, as the provider's
// Diff takes it (clients.IsNamespacedKind's NoNamespaceInfo error).
func (w *wire) namespaced(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	mapping, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err != nil || mapping.Scope.Name() == meta.RESTScopeNameNamespace
}

func (w *wire) client(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		namespace := obj.GetNamespace()
		if namespace == "" {
			namespace = "default"
		}
		return w.dynamic.Resource(mapping.Resource).Namespace(namespace), nil
	}
	return w.dynamic.Resource(mapping.Resource), nil
}

// keepIgnoredFields is await.go handleSSAIgnoreFields: a field under ignoreChanges that another
// field manager owns alone (an autoscaler's spec.replicas) is left out of the apply; one we own is
// sent with its live value, so an update never resets it.
func (w *wire) keepIgnoredFields(ctx context.Context, obj *unstructured.Unstructured, manager string, ignored []string) error {
	if len(ignored) == 0 {
		return nil
	}
	client, err := w.client(obj)
	if err != nil {
		return err
	}
	live, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	ours, theirs := &fieldpath.Set{}, &fieldpath.Set{}
	for _, entry := range live.GetManagedFields() {
		set := &fieldpath.Set{}
		if entry.FieldsV1 == nil || set.FromJSON(bytes.NewReader(entry.FieldsV1.Raw)) != nil {
			continue
		}
		if entry.Manager == manager {
			ours = ours.Union(set)
		} else {
			theirs = theirs.Union(set)
		}
	}
	inputs := resource.NewPropertyMapFromMap(obj.Object)
	for _, path := range ignored {
		parsed, err := resource.ParsePropertyPath(path)
		if err != nil {
			return err
		}
		var elements []any
		for _, e := range parsed {
			elements = append(elements, e)
		}
		fields, err := fieldpath.MakePath(elements...)
		if err != nil {
			return err
		}
		if theirs.Has(fields) && !ours.Has(fields) {
			parsed.Delete(resource.NewObjectProperty(inputs))
			continue
		}
		if value, ok := parsed.Get(resource.NewObjectProperty(resource.NewPropertyMapFromMap(live.Object))); ok {
			parsed.Set(resource.NewObjectProperty(inputs), value)
		}
	}
	obj.Object = inputs.Mappable()
	return nil
}

// csaManagers are the client-side managers whose fields the provider's update takes over: its
// own creation's (Create records the operation Update), and kubectl's.
var csaManagers = sets.New("pulumi-kubernetes", "pulumi-kubernetes.exe", "pulumi-resource-kubernetes", "kubectl", "before-first-apply")

// takeOverCreationFields makes the fields the object's creation (and kubectl) set the apply
// manager's before an update, as the provider does (pkg/await/await.go fixCSAFieldManagers, with
// fluxcd's PatchReplaceFieldsManagers): an update that no longer gives a field then removes it.
// Without it a field set at creation stays for ever: a Deployment moved from RollingUpdate to
// Recreate keeps its rollingUpdate, which the API server refuses. client-go's csaupgrade merges
// the Update-operation entries (the wire's objects never carry kubectl's Apply ones).
func takeOverCreationFields(ctx context.Context, client dynamic.ResourceInterface, live *unstructured.Unstructured, manager string) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, csaManagers, manager)
	if err != nil || patch == nil {
		return err
	}
	_, err = client.Patch(ctx, live.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// write creates or updates the object with the field manager and waits for it.
func (w *wire) write(ctx context.Context, urn resource.URN, obj *unstructured.Unstructured, manager string, timeout float64, update bool) (*unstructured.Unstructured, error) {
	client, err := w.client(obj)
	if err != nil {
		return nil, err
	}
	var live, before *unstructured.Unstructured
	if update || isPatch(urn, obj) {
		if current, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{}); err == nil {
			before = current
		}
		if before != nil && !isPatch(urn, obj) {
			if err := takeOverCreationFields(ctx, client, before, manager); err != nil {
				return nil, fmt.Errorf("taking over %s %s's fields: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		// A Patch resource forces only with pulumi.com/patchForce. Another resource's first update
		// takes its creation's fields over (await.go fixCSAFieldManagers); a forced apply of its
		// own manager does the same.
		force := obj.GetAnnotations()["pulumi.com/patchForce"] == "true" || !isPatch(urn, obj)
		live, err = client.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: manager, Force: &force})
		if err != nil {
			return nil, fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	} else {
		live, err = client.Create(ctx, obj, metav1.CreateOptions{FieldManager: "pulumi-kubernetes"})
		if err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if stale, err := w.staleObject(ctx, obj, before, live); stale != nil || err != nil {
		return stale, err
	}
	return w.await(ctx, client, obj, live, awaitTimeout(obj, timeout))
}

// staleObject is the object as it was before an apply that left its generation as it was, when
// that one already satisfies the wait: what the real provider may return then. Its wait reads
// objects from an informer shared by every resource of the kind (await.go Creation,
// condition.NewDynamicSource), which can hand it the object from before the apply, and
// condition/observer.go ObjectObserver.Observe takes any object whose generation is not older
// than the one it has; so the wait ends on it and Create or Update returns it as the state
// (mirror/kubeprovider/testdata/traces, the spurious-diff run). The stand-in always takes this
// worst case, so a change that relies on the fresh object fails here too.
func (w *wire) staleObject(ctx context.Context, obj, before, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if before == nil || before.GetGeneration() != live.GetGeneration() {
		return nil, nil
	}
	ready := readiness(obj, live)
	if ready == nil {
		return nil, nil
	}
	ok, _, err := ready(ctx, w, before)
	if !ok || err != nil {
		return nil, err
	}
	return before, nil
}

// awaitTimeout is metadata/overrides.go TimeoutDuration: customTimeouts, else
// pulumi.com/timeoutSeconds, else 10 minutes.
func awaitTimeout(obj *unstructured.Unstructured, custom float64) time.Duration {
	if custom > 0 {
		return time.Duration(custom * float64(time.Second))
	}
	if s, err := strconv.Atoi(obj.GetAnnotations()["pulumi.com/timeoutSeconds"]); err == nil {
		return time.Duration(s) * time.Second
	}
	return 10 * time.Minute
}

// await waits until the object is ready as pulumi-kubernetes judges it, or timeout: first the
// object the write returned (condition/observer.go NewObjectObserver starts from it: a condition
// with no generation to compare passes on the status before the change), then the live object.
func (w *wire) await(ctx context.Context, client dynamic.ResourceInterface, obj, live *unstructured.Unstructured, timeout time.Duration) (*unstructured.Unstructured, error) {
	ready := readiness(obj, live)
	if ready == nil {
		return live, nil
	}
	ok, why, err := ready(ctx, w, live)
	if ok || err != nil {
		return live, err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		current, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		live = current
		ok, reason, err := ready(ctx, w, current)
		why = reason
		return ok, err
	})
	if err != nil {
		return live, fmt.Errorf("%s %s/%s not ready after %s: %s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), timeout, why, err)
	}
	return live, nil
}

// readyFunc says whether a live object is ready, and why not.
type readyFunc func(ctx context.Context, w *wire, live *unstructured.Unstructured) (bool, string, error)

// readiness is the wait pulumi-kubernetes applies to the object it wrote, nil for none: as
// metadata/overrides.go ReadyCondition decides it, skipAwait read from the resource's inputs and
// waitFor from the written object (which holds every field manager's annotations, so a Patch
// resource without waitFor still waits for the one another manager set). Without waitFor, the
// kind's own wait (await.go's legacy awaiters).
func readiness(inputs, written *unstructured.Unstructured) readyFunc {
	if inputs.GetAnnotations()["pulumi.com/skipAwait"] == "true" {
		return nil
	}
	waitFor := written.GetAnnotations()["pulumi.com/waitFor"]
	if path, ok := strings.CutPrefix(waitFor, "jsonpath="); ok {
		return jsonPathReady(path)
	}
	if waitFor != "" {
		condition, status, _ := strings.Cut(strings.TrimPrefix(waitFor, "condition="), "=")
		if status == "" {
			status = "True"
		}
		return func(_ context.Context, _ *wire, live *unstructured.Unstructured) (bool, string, error) {
			return HasCondition(live, condition, status)
		}
	}
	switch written.GroupVersionKind().GroupKind().String() {
	case "Deployment.apps":
		return deploymentReady
	case "Job.batch":
		return jobComplete
	case "Service":
		return serviceHasEndpoints
	case "PersistentVolumeClaim":
		return claimReady
	}
	return nil
}

// HasCondition is condition/kubectl.go checkCondition: the condition's status, provided its
// observedGeneration (or the status's) is not older than the object's generation.
func HasCondition(live *unstructured.Unstructured, conditionType, want string) (bool, string, error) {
	conditions, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	for _, c := range conditions {
		condition, _ := c.(map[string]any)
		if !strings.EqualFold(fmt.Sprint(condition["type"]), conditionType) {
			continue
		}
		observed, found, _ := unstructured.NestedInt64(condition, "observedGeneration")
		if !found {
			observed, found, _ = unstructured.NestedInt64(live.Object, "status", "observedGeneration")
		}
		if found && observed < live.GetGeneration() {
			return false, fmt.Sprintf("generation %d is less than expected %d", observed, live.GetGeneration()), nil
		}
		status := fmt.Sprint(condition["status"])
		return strings.EqualFold(status, want), fmt.Sprintf("%s=%s (want %s): %v", conditionType, status, want, condition["message"]), nil
	}
	return false, "no " + conditionType + " condition", nil
}

// jsonPathReady is condition/jsonpath.go for the paths the component uses, "{.a.b}" or
// "{.a.b}=value": the field is there (and equals value); not while status.observedGeneration is
// older than the object's generation.
func jsonPathReady(expr string) readyFunc {
	path, want, _ := strings.Cut(expr, "=")
	fields := strings.Split(strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(path, "{"), "}"), "."), ".")
	return func(_ context.Context, _ *wire, live *unstructured.Unstructured) (bool, string, error) {
		observed, found, _ := unstructured.NestedInt64(live.Object, "status", "observedGeneration")
		if found && observed < live.GetGeneration() {
			return false, fmt.Sprintf("generation %d is less than expected %d", observed, live.GetGeneration()), nil
		}
		value, found, err := unstructured.NestedFieldNoCopy(live.Object, fields...)
		if err != nil || !found {
			return false, path + " selected nothing", err
		}
		return want == "" || fmt.Sprint(value) == want, fmt.Sprintf("%s is %v (want %q)", path, value, want), nil
	}
}

// deploymentReady: the new ReplicaSet rolled out and available (await/deployment.go).
func deploymentReady(_ context.Context, _ *wire, live *unstructured.Unstructured) (bool, string, error) {
	observed, _, _ := unstructured.NestedInt64(live.Object, "status", "observedGeneration")
	replicas, found, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	updated, _, _ := unstructured.NestedInt64(live.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(live.Object, "status", "availableReplicas")
	if observed < live.GetGeneration() || updated < replicas || available < replicas {
		return false, fmt.Sprintf("%d/%d updated, %d available", updated, replicas, available), nil
	}
	return HasCondition(live, "Available", "True")
}

// jobComplete: Complete, or an error on Failed (await/checker/job).
func jobComplete(_ context.Context, _ *wire, live *unstructured.Unstructured) (bool, string, error) {
	if failed, why, _ := HasCondition(live, "Failed", "True"); failed {
		return false, why, fmt.Errorf("job failed: %s", why)
	}
	return HasCondition(live, "Complete", "True")
}

// claimReady: a claim is Bound, or, with a storage class that binds on the first consumer,
// Pending (awaiters.go untilCoreV1PersistentVolumeClaimReady).
func claimReady(ctx context.Context, w *wire, live *unstructured.Unstructured) (bool, string, error) {
	phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
	if phase == string(corev1.ClaimBound) {
		return true, "", nil
	}
	class, _, _ := unstructured.NestedString(live.Object, "spec", "storageClassName")
	sc, err := w.dynamic.Resource(storageClasses).Get(ctx, class, metav1.GetOptions{})
	if err != nil {
		return false, "", fmt.Errorf("getting storage class %q: %w", class, err)
	}
	mode, _, _ := unstructured.NestedString(sc.Object, "volumeBindingMode")
	if mode == string(storagev1.VolumeBindingWaitForFirstConsumer) {
		return phase == string(corev1.ClaimPending), "waiting for the claim to be Pending", nil
	}
	return false, fmt.Sprintf("claim %s, waiting for Bound", phase), nil
}

var storageClasses = storagev1.SchemeGroupVersion.WithResource("storageclasses")

// serviceHasEndpoints: a Service with a selector is ready when its Endpoints have an address
// (await/service.go); one without a selector at once.
func serviceHasEndpoints(ctx context.Context, w *wire, live *unstructured.Unstructured) (bool, string, error) {
	selector, _, _ := unstructured.NestedMap(live.Object, "spec", "selector")
	serviceType, _, _ := unstructured.NestedString(live.Object, "spec", "type")
	if len(selector) == 0 || serviceType == "ExternalName" {
		return true, "", nil
	}
	endpoints, err := w.dynamic.Resource(endpointsResource).Namespace(live.GetNamespace()).Get(ctx, live.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "no Endpoints yet", nil
	}
	if err != nil {
		return false, "", err
	}
	subsets, _, _ := unstructured.NestedSlice(endpoints.Object, "subsets")
	for _, s := range subsets {
		if addresses, _, _ := unstructured.NestedSlice(s.(map[string]any), "addresses"); len(addresses) > 0 {
			return true, "", nil
		}
	}
	return false, "no ready endpoint", nil
}

// delete deletes the object with foreground propagation and waits until it is gone; a Patch
// resource relinquishes its fields (an apply of nothing but its identity).
func (w *wire) delete(ctx context.Context, urn resource.URN, obj *unstructured.Unstructured, manager string, timeout float64) error {
	client, err := w.client(obj)
	if err != nil {
		return err
	}
	if isPatch(urn, obj) {
		identity := &unstructured.Unstructured{}
		identity.SetAPIVersion(obj.GetAPIVersion())
		identity.SetKind(obj.GetKind())
		identity.SetName(obj.GetName())
		identity.SetNamespace(obj.GetNamespace())
		data, err := yaml.Marshal(identity.Object)
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	// metadata/overrides.go DeletionPropagation: the annotation of the inputs, any case, else foreground
	propagation := metav1.DeletePropagationForeground
	switch strings.ToLower(obj.GetAnnotations()["pulumi.com/deletionPropagationPolicy"]) {
	case "orphan":
		propagation = metav1.DeletePropagationOrphan
	case "background":
		propagation = metav1.DeletePropagationBackground
	}
	if err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &propagation}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, awaitTimeout(obj, timeout), true, func(ctx context.Context) (bool, error) {
		_, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

var endpointsResource = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
