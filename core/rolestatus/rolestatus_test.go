// SPDX-License-Identifier: Apache-2.0

package rolestatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

func TestOfLeaderWorkerSet(t *testing.T) {
	assert.Equal(t, Replica{Replicas: 1}, OfLeaderWorkerSet(nil), "not created yet")
	assert.Equal(t, Replica{Replicas: 3}, OfLeaderWorkerSet(&lwsv1.LeaderWorkerSet{Spec: lwsv1.LeaderWorkerSetSpec{Replicas: ptr.To[int32](3)}}),
		"created, not seen by its controller")
	rolling := &lwsv1.LeaderWorkerSet{Status: lwsv1.LeaderWorkerSetStatus{ReadyReplicas: 1, Conditions: []metav1.Condition{
		{Type: string(lwsv1.LeaderWorkerSetUpdateInProgress), Status: metav1.ConditionTrue}}}}
	assert.Equal(t, Replica{Observed: true, Replicas: 1, ReadyReplicas: 1, Updating: true}, OfLeaderWorkerSet(rolling))
}

func TestOf(t *testing.T) {
	ready := Replica{Observed: true, Replicas: 1, ReadyReplicas: 1}
	starting := Replica{Observed: true, Replicas: 1}
	unobserved := Replica{Replicas: 1}
	for _, tc := range []struct {
		replicas []Replica
		want     Phase
	}{
		{[]Replica{ready, ready}, Running},
		{[]Replica{starting, starting}, Pending},
		{[]Replica{ready, starting}, Progressing},
		{[]Replica{ready, unobserved}, Progressing},
		{[]Replica{unobserved}, Unknown},
		{[]Replica{ready, {Replicas: 1, Failed: true}}, Failed},
		{[]Replica{ready, {Observed: true, Replicas: 1, ReadyReplicas: 1, Updating: true}}, Progressing},
		{[]Replica{{Replicas: 0}}, ScaledToZero},                 // an elastic LWS at none, its controller silent
		{[]Replica{{Observed: true, Replicas: 0}}, ScaledToZero}, // and seen
		{[]Replica{ready, {Replicas: 0}}, Running},               // a role beside it runs
		{[]Replica{{Replicas: 0}, unobserved}, Unknown},          // woken, its replica not seen yet
		{nil, Unknown},
	} {
		assert.Equal(t, tc.want, Of(tc.replicas), "%+v", tc.replicas)
	}
}

func TestPodReady(t *testing.T) {
	pod := func(conditions ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: conditions}}
	}
	assert.False(t, PodReady(pod()), "no condition yet")
	assert.False(t, PodReady(pod(corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})), "containers ready, pod not")
	assert.True(t, PodReady(pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})))
}
