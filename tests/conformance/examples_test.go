// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// exampleTrees are the built trees of every example manifest, by file name.
func exampleTrees(t *testing.T) map[string][]*render.Tree {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repositoryRoot(), "examples", "manifests", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string][]*render.Tree{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		docs, errs := api.Decode(data)
		require.Empty(t, errs)
		for _, doc := range docs {
			tree, verrs := render.Build(doc.Service)
			require.Empty(t, verrs)
			out[filepath.Base(file)] = append(out[filepath.Base(file)], tree)
		}
	}
	return out
}

// exampleObjects are the objects of every example manifest, by file: what `fusioninfer render`
// prints and (tests/frontdoors, examples/go) what the component registers.
func exampleObjects(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	out := map[string][]*unstructured.Unstructured{}
	for file, trees := range exampleTrees(t) {
		for _, tree := range trees {
			for i := range tree.Objects {
				m, err := tree.Objects[i].Unstructured()
				require.NoError(t, err)
				out[file] = append(out[file], &unstructured.Unstructured{Object: m})
			}
		}
	}
	return out
}

func TestExamplesAreAcceptedKeptAndStable(t *testing.T) {
	total := 0
	for file, objects := range exampleObjects(t) {
		t.Run(file, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			progress("applying %d objects of %s", len(objects), file)
			total += len(objects)
			for _, obj := range objects {
				if ns := obj.GetNamespace(); ns != "" { // a NodePool is cluster-scoped
					require.NoError(t, testCluster.ensureNamespace(ctx, ns))
				}
			}
			firstApply := map[string]*unstructured.Unstructured{}
			for _, obj := range objects {
				key := obj.GetKind() + "/" + obj.GetName()
				applied, err := testCluster.apply(ctx, obj.DeepCopy())
				require.NoError(t, err, "%s is accepted", key)
				live, err := testCluster.get(ctx, obj)
				require.NoError(t, err)
				assert.Empty(t, prunedFields(obj.Object, live.Object), "%s keeps every field we set", key)
				firstApply[key] = applied
			}
			for _, obj := range objects {
				key := obj.GetKind() + "/" + obj.GetName()
				again, err := testCluster.apply(ctx, obj.DeepCopy())
				require.NoError(t, err)
				if _, serverWritesStatus := statusWrittenByTheServer[obj.GroupVersionKind()]; serverWritesStatus {
					assert.Equal(t, firstApply[key].GetGeneration(), again.GetGeneration(), "a second apply of %s changes nothing", key)
					continue
				}
				if why, protected := protectedByAdmission[obj.GroupVersionKind()]; protected {
					assert.Equal(t, withoutFinalizers(firstApply[key]), withoutFinalizers(again), "a second apply of %s changes nothing but its finalizers (%s)", key, why)
					continue
				}
				if why, rewritten := rewrittenOnEveryApply[obj.GroupVersionKind()]; rewritten {
					assert.Equal(t, withoutVersion(firstApply[key]), withoutVersion(again), "a second apply of %s changes nothing but its version (%s)", key, why)
					continue
				}
				assert.Equal(t, firstApply[key].GetResourceVersion(), again.GetResourceVersion(), "a second apply of %s changes nothing", key)
			}
			for _, obj := range objects {
				require.NoError(t, testCluster.delete(ctx, obj))
				if _, protected := protectedByAdmission[obj.GroupVersionKind()]; protected {
					require.NoError(t, testCluster.dropFinalizers(ctx, obj), "no controller of this cluster removes them")
				}
			}
			// Every object goes. A CRD goes once the API server's own customresourcecleanup finalizer
			// has run, which is the server's business, not our objects': deleted right after its
			// group's CRDs were created it can fail on "storage is (re)initializing"
			// (k8s.io/apiextensions-apiserver pkg/controller/finalizer/crd_finalizer.go, sync ->
			// deleteInstances) and, on 2 busy cores, stay Terminating for minutes (FMA's, once in
			// CI). So a CRD being deleted counts.
			for _, obj := range objects {
				require.NoError(t, waitFor(2*time.Minute, func() error {
					live, err := testCluster.get(ctx, obj)
					switch {
					case isNotFound(err):
						return nil
					case err == nil && obj.GetKind() == "CustomResourceDefinition" && live.GetDeletionTimestamp() != nil:
						return nil
					}
					return assert.AnError
				}), "%s/%s is gone", obj.GetKind(), obj.GetName())
			}
		})
	}
	progress("checked %d objects", total)
}

// rewrittenOnEveryApply are kinds whose upstream CRD makes the API server write every update, even
// one that changes nothing: the object must still come back the same.
var rewrittenOnEveryApply = map[schema.GroupVersionKind]string{
	{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Kind: "InferencePool"}: "its CRD defaults status.parent, which the " +
		"status subresource drops on create, so the stored object never equals the defaulted one",
}

// protectedByAdmission are kinds whose protection finalizer the API server's admission adds on
// create, attributed to the creating field manager: a second server-side apply, which does not
// name it, removes it, and the protection controller (kube-controller-manager, not run here; the
// e2e suite runs it) puts it back.
var protectedByAdmission = map[schema.GroupVersionKind]string{
	{Version: "v1", Kind: "PersistentVolumeClaim"}: "StorageObjectInUseProtection adds kubernetes.io/pvc-protection",
}

// withoutFinalizers is the object without its version and finalizers.
func withoutFinalizers(obj *unstructured.Unstructured) map[string]any {
	out := &unstructured.Unstructured{Object: withoutVersion(obj)}
	out.SetFinalizers(nil)
	return out.Object
}

// statusWrittenByTheServer are kinds whose status the API server itself writes after a create
// (so their version moves on its own): a second apply must leave their generation alone.
var statusWrittenByTheServer = map[schema.GroupVersionKind]string{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}: "NamesAccepted, Established",
}

// withoutVersion is the object without what every write changes.
func withoutVersion(obj *unstructured.Unstructured) map[string]any {
	out := obj.DeepCopy()
	out.SetResourceVersion("")
	out.SetManagedFields(nil)
	return out.Object
}
