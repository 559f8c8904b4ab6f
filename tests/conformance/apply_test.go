// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// fieldManager is the server-side apply manager of the suite, as Pulumi and kubectl have theirs.
const fieldManager = "fusioninfer-conformance"

func (c *cluster) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	info, ok := kinds[obj.GroupVersionKind()]
	if !ok {
		return nil, fmt.Errorf("no CRD installed for %s", obj.GroupVersionKind())
	}
	if info.namespaced {
		return c.client.Resource(info.gvr).Namespace(obj.GetNamespace()), nil
	}
	return c.client.Resource(info.gvr), nil
}

// apply server-side applies an object, as `kubectl apply --server-side` and Pulumi do. A CRD
// that an earlier test deleted and the API server is still removing (its customresourcecleanup
// finalizer: TestExamplesAreAcceptedKeptAndStable counts such a CRD as gone) is waited out
// first: an apply would change the terminating CRD, which then disappears under the test.
func (c *cluster) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.resource(obj)
	if err != nil {
		return nil, err
	}
	if obj.GetKind() == "CustomResourceDefinition" {
		if err := waitFor(2*time.Minute, func() error {
			live, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
			switch {
			case isNotFound(err):
				return nil
			case err != nil:
				return err
			case live.GetDeletionTimestamp() != nil:
				return fmt.Errorf("CRD %s is still being deleted", obj.GetName())
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return r.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

func (c *cluster) get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.resource(obj)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, obj.GetName(), metav1.GetOptions{})
}

func (c *cluster) delete(ctx context.Context, obj *unstructured.Unstructured) error {
	r, err := c.resource(obj)
	if err != nil {
		return err
	}
	// Background: the object goes at once. A Job's default (orphan) would wait for the garbage
	// collector, which this cluster does not run (the e2e suite does, and deletes in foreground).
	return r.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

// dropFinalizers removes an object's finalizers, as their controller would.
func (c *cluster) dropFinalizers(ctx context.Context, obj *unstructured.Unstructured) error {
	r, err := c.resource(obj)
	if err != nil {
		return err
	}
	_, err = r.Patch(ctx, obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ensureNamespace creates a namespace unless it exists.
func (c *cluster) ensureNamespace(ctx context.Context, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	_, err := c.apply(ctx, ns)
	return err
}

// toUnstructured converts a typed object (or a map) to the unstructured form a client sends.
func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	if m, ok := obj.(map[string]any); ok {
		return &unstructured.Unstructured{Object: m}, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}, nil
}

// prunedFields lists every field we set that the server did not keep with the same value: a
// field silently dropped by the CRD's schema (pruning), or changed on the way.
func prunedFields(want, got map[string]any) []string {
	var out []string
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		switch wv := w.(type) {
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok {
				out = append(out, path)
				return
			}
			keys := make([]string, 0, len(wv))
			for k := range wv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				child, present := gv[k]
				if !present {
					out = append(out, path+"."+k)
					continue
				}
				walk(path+"."+k, wv[k], child)
			}
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(wv) {
				out = append(out, path)
				return
			}
			for i := range wv {
				walk(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i])
			}
		default:
			if !reflect.DeepEqual(w, g) {
				out = append(out, fmt.Sprintf("%s (%v -> %v)", path, w, g))
			}
		}
	}
	walk("", jsonNormalized(want), jsonNormalized(got))
	return out
}

// jsonNormalized gives both sides JSON's types (float64 numbers), so 8 and int64(8) compare equal.
func jsonNormalized(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
