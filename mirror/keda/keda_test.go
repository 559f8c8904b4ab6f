// SPDX-License-Identifier: Apache-2.0

package keda_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/mirrortest"
)

// TestDeepCopiesShareNothing: a filled mirror's deep copy is equal to it, and changing every
// string, map and slice element of the copy in place leaves the original as it was (no map, slice
// or pointer shared), as informers and clients rely on when they hand out copies.
func TestDeepCopiesShareNothing(t *testing.T) {
	mirrortest.RequireDeepCopiesShareNothing(t, func() []runtime.Object { return []runtime.Object{&keda.ScaledObject{}} })
}
