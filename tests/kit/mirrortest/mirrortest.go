// SPDX-License-Identifier: Apache-2.0

// Package mirrortest holds what the tests of the mirror packages (mirror/karpenter, mirror/keda)
// share: a filler that sets every field with values both a mirror and its upstream type carry, and
// the check that a mirror's generated deep copy shares nothing with its original (tests only).
package mirrortest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// Filler sets every field, with values both sides can carry (quantities, timestamps to the second).
func Filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 2).Funcs(
		func(s *string, c randfill.Continue) { *s = "v" + c.String(6) },
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Intn(1000)+1), resource.DecimalSI)
		},
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(int64(c.Int31()), 0).Rfc3339Copy() },
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			*m = metav1.ObjectMeta{Name: "v" + c.String(6), Labels: map[string]string{"a": c.String(4)}}
		},
		func(s *metav1.ConditionStatus, c randfill.Continue) { *s = metav1.ConditionFalse },
		func(e *corev1.TaintEffect, c randfill.Continue) { *e = corev1.TaintEffectNoSchedule },
		func(op *corev1.NodeSelectorOperator, c randfill.Continue) { *op = corev1.NodeSelectorOpIn },
	)
}

// RequireDeepCopiesShareNothing: each filled object's deep copy is equal to it, and changing every
// string, map and slice element of the copy in place leaves the original as it was (no map, slice
// or pointer shared), as informers and clients rely on when they hand out copies. objects gives
// new empty objects of each mirrored kind.
func RequireDeepCopiesShareNothing(t *testing.T, objects func() []runtime.Object) {
	t.Helper()
	for seed := int64(0); seed < 10; seed++ {
		for _, obj := range objects() {
			Filler(seed).Fill(obj)
			before, err := json.Marshal(obj)
			require.NoError(t, err)
			cp := obj.DeepCopyObject()
			require.Equal(t, obj, cp)
			changeInPlace(reflect.ValueOf(cp))
			require.NotEqual(t, obj, cp)
			after, err := json.Marshal(obj)
			require.NoError(t, err)
			require.JSONEq(t, string(before), string(after), "%T: changing the copy changed the original", obj)
		}
	}
}

// changeInPlace changes every exported string under v where it is stored and adds a key to every
// map, so whatever v shares with another object changes there too.
func changeInPlace(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			changeInPlace(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				changeInPlace(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			changeInPlace(v.Index(i))
		}
	case reflect.Map:
		if !v.IsNil() {
			v.SetMapIndex(reflect.ValueOf("added").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		}
	case reflect.String:
		v.SetString(v.String() + "-changed")
	}
}
