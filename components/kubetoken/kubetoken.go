// SPDX-License-Identifier: Apache-2.0

// Package kubetoken names the pulumi-kubernetes resource type of a Kubernetes kind, as both
// components register their children: the provider reads the group, version and kind back from
// it (pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go gvkFromURN, mirrored in
// mirror/kubeprovider and held to every child's type by the components' tests).
package kubetoken

import "strings"

// Of is "kubernetes:{group}/{version}:{kind}", as apiextensions.NewCustomResource derives it,
// except for the core group, which pulumi-kubernetes names "core" ("kubernetes:core/v1:Service"):
// the provider reads the group and version from the type, never from the inputs, and refuses one
// without both.
func Of(apiVersion, kind string) string {
	if !strings.Contains(apiVersion, "/") {
		apiVersion = "core/" + apiVersion
	}
	return "kubernetes:" + apiVersion + ":" + kind
}

// PatchOf is the provider's Patch resource of a kind, "kubernetes:{group}/{version}:{kind}Patch",
// as apiextensions.NewCustomResourcePatch registers it (the provider treats a resource as a Patch
// when its type's name is the inputs' kind + "Patch").
func PatchOf(apiVersion, kind string) string { return Of(apiVersion, kind) + "Patch" }
