// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resources maps each installed kind to its resource, so objects can be applied by kind.
type resources map[schema.GroupVersionKind]resourceInfo

type resourceInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// kinds maps every kind the project emits to its resource: the built-in ones and those of the
// CRDs the cluster installed.
func (c *cluster) kinds() resources {
	mapping := resources{
		{Version: "v1", Kind: "Namespace"}: {gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}},
	}
	// The built-in kinds a router and a model's cache emit.
	for gvk, resource := range map[schema.GroupVersionKind]string{
		{Version: "v1", Kind: "PersistentVolumeClaim"}:                           "persistentvolumeclaims",
		{Group: "batch", Version: "v1", Kind: "Job"}:                             "jobs",
		{Version: "v1", Kind: "ServiceAccount"}:                                  "serviceaccounts",
		{Version: "v1", Kind: "ConfigMap"}:                                       "configmaps",
		{Version: "v1", Kind: "Secret"}:                                          "secrets", // the picker's metrics token
		{Version: "v1", Kind: "Service"}:                                         "services",
		{Group: "apps", Version: "v1", Kind: "Deployment"}:                       "deployments",
		{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}:            "poddisruptionbudgets", // several pickers'
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:        "roles",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}: "rolebindings",
	} {
		mapping[gvk] = resourceInfo{gvr: gvk.GroupVersion().WithResource(resource), namespaced: true}
	}
	// The cluster-scoped kinds FMA's controller install and the picker's metrics auth emit.
	for gvk, resource := range map[schema.GroupVersionKind]string{
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}:                 "customresourcedefinitions",
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}:        "validatingadmissionpolicies",
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}: "validatingadmissionpolicybindings",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:                         "clusterroles",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:                  "clusterrolebindings",
	} {
		mapping[gvk] = resourceInfo{gvr: gvk.GroupVersion().WithResource(resource)}
	}
	for _, created := range c.CRDs {
		group, _, _ := unstructured.NestedString(created.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(created.Object, "spec", "names", "plural")
		kind, _, _ := unstructured.NestedString(created.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(created.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(created.Object, "spec", "versions")
		for _, v := range versions {
			name := v.(map[string]any)["name"].(string)
			mapping[schema.GroupVersionKind{Group: group, Version: name, Kind: kind}] = resourceInfo{
				gvr:        schema.GroupVersionResource{Group: group, Version: name, Resource: plural},
				namespaced: scope == "Namespaced",
			}
		}
	}
	return mapping
}
