// SPDX-License-Identifier: Apache-2.0

//go:build conformance

// Package platform checks what `fusioninfer platform render` prints against a real kube-apiserver
// (tests/cluster, Options.Platform): every object of every part, the controllers' Deployments,
// Services, Jobs, APIService and webhook configurations too, is accepted and kept. The e2e suite
// installs the rest of it and runs the controllers on it (docs/design/0021-platform.md).
package platform

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	coreplatform "github.com/fusioninfer/pulumi-fusioninfer/core/platform"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	testcluster.Main(m, testcluster.Options{Platform: true}, func(c *testcluster.Cluster) { cluster = c })
}

func resourceOf(t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cluster.Config)))
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err, gvk)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return cluster.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	return cluster.Dynamic.Resource(mapping.Resource)
}

// TestEveryObjectIsKept: the server stored every object of the whole platform as rendered: each
// field rendered reads back the same (the server adds defaults, changes none).
func TestEveryObjectIsKept(t *testing.T) {
	all, err := coreplatform.Render(testcluster.WholePlatform())
	require.NoError(t, err)
	require.Len(t, cluster.Platform(), len(all), "Start installed the whole platform")
	for _, o := range all {
		stored, err := resourceOf(t, o.Object).Get(context.Background(), o.Object.GetName(), metav1.GetOptions{})
		require.NoError(t, err, o.Key())
		rendered := o.Object.DeepCopy().Object
		delete(rendered, "status") // the server's
		requireKept(t, o.Key(), "", rendered, stored.Object)
	}
}

// requireKept: every field of want is in got with the same value (got may have more).
func requireKept(t *testing.T, key, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s%s: a map, stored as %T", key, path, got)
		for k, v := range w {
			if _, stored := g[k]; !stored && empty(v) { // the server drops an empty value (omitempty)
				continue
			}
			requireKept(t, key, path+"."+k, v, g[k])
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s%s: a list, stored as %T", key, path, got)
		require.Len(t, g, len(w), "%s%s", key, path)
		for i := range w {
			requireKept(t, key, path+"[]", w[i], g[i])
		}
	default:
		if s, ok := got.(string); ok && want != any(s) { // a quantity the server writes canonically (1: "1", 1000m: "1")
			w, err1 := resource.ParseQuantity(fmt.Sprint(want))
			g, err2 := resource.ParseQuantity(s)
			require.True(t, err1 == nil && err2 == nil && w.Cmp(g) == 0, "%s%s: %v, stored as %q", key, path, want, s)
			return
		}
		require.EqualValues(t, want, got, "%s%s", key, path)
	}
}

// empty is a value the server does not store: null, "", or an empty map or list.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// TestABrokenObjectIsRefused: the negative control: the same server refuses a Deployment of the
// platform with a field of the wrong type.
func TestABrokenObjectIsRefused(t *testing.T) {
	all, err := coreplatform.Render(testcluster.WholePlatform())
	require.NoError(t, err)
	for _, o := range all {
		if o.Object.GetKind() != "Deployment" {
			continue
		}
		broken := o.Object.DeepCopy()
		broken.SetName("broken")
		require.NoError(t, unstructured.SetNestedField(broken.Object, "two", "spec", "replicas"))
		_, err := resourceOf(t, broken).Create(context.Background(), broken, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err)
		return
	}
	t.Fatal("no Deployment in the platform")
}
