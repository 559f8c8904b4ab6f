// SPDX-License-Identifier: Apache-2.0

// Package kubeprovider holds the rules of the pulumi-kubernetes provider (v4.32.0) that this
// project depends on, mirrored from its source because the provider itself cannot be had here:
// how it reads a resource's group, version and kind from its type token, what Check makes of the
// inputs, what Create and Update return as state, and how Diff compares that state with new
// inputs. Each function names the file and function it copies. The component's tests hold its
// type tokens to these rules, the e2e stand-in for the provider (tests/e2e/harness) answers with
// them, and the contract test holds them to the real provider's recorded answers
// (testdata/traces).
package kubeprovider

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Package is the provider's package name, the first part of every type token it serves.
const Package = "kubernetes"

// coreGroup is how a type token names the core group ("kubernetes:core/v1:Service"):
// provider/pkg/provider/provider.go, const coreGroup.
const coreGroup = "core"

// GVKFromURN is provider/pkg/provider/provider.go gvkFromURN: the group, version and kind a URN's
// type names, or the provider's own error. Check calls it for every resource, so a type token it
// refuses fails the first `pulumi up` or preview.
func GVKFromURN(urn resource.URN) (schema.GroupVersionKind, error) {
	if string(urn.Type().Package()) != Package {
		return schema.GroupVersionKind{}, fmt.Errorf("unrecognized resource type: %q for this provider", urn.Type())
	}
	kind := string(urn.Type().Name())
	gv := strings.Split(string(urn.Type().Module().Name()), "/")
	if len(gv) != 2 {
		return schema.GroupVersionKind{},
			fmt.Errorf("apiVersion does not have both a group and a version: %q", urn.Type().Module().Name())
	}
	group, version := gv[0], gv[1]
	if group == coreGroup {
		group = ""
	}
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, nil
}

// IsPatchResource is provider/pkg/kinds/util.go IsPatchResource: a resource is a Patch of kind
// when its type's name is exactly kind + "Patch" (the inputs' kind, not any name ending in Patch).
func IsPatchResource(urn resource.URN, kind string) bool {
	return kind+"Patch" == urn.Type().Name().String()
}

// ObjectGVK is the group, version and kind of the object a resource of this URN writes, with
// the provider's rules: the type token's (GVKFromURN), less the "Patch" of a Patch resource, as
// the provider's List does for a Patch's token (provider.go, List: strings.TrimSuffix(gvk.Kind,
// "Patch")). inputKind is the kind in the resource's inputs.
func ObjectGVK(urn resource.URN, inputKind string) (schema.GroupVersionKind, error) {
	gvk, err := GVKFromURN(urn)
	if err != nil {
		return gvk, err
	}
	if IsPatchResource(urn, inputKind) {
		gvk.Kind = inputKind
	}
	return gvk, nil
}
