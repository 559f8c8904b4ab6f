// SPDX-License-Identifier: Apache-2.0

package diagnosis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
)

// A service whose only serving role is at zero replicas runs as far as a script is concerned: a
// request wakes it. The status says so, and since when it has been idle (KEDA's lastActiveTime).
func TestAServiceScaledToZeroIsIdleNotPending(t *testing.T) {
	svc := manifest(t, "qwen-scale-to-zero.yaml", "llm")
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	o := &diagnosis.Observed{}
	idleSince := metav1.NewTime(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC))
	for _, obj := range tree.Objects {
		switch x := obj.Object.(type) {
		case *lwsv1.LeaderWorkerSet: // as the LWS controller reports one at none
			lws := x.DeepCopy()
			lws.Status.Conditions = []metav1.Condition{{Type: string(lwsv1.LeaderWorkerSetAvailable), Status: metav1.ConditionTrue, Reason: "AllGroupsReady"}}
			o.LeaderWorkerSets = append(o.LeaderWorkerSets, *lws)
		case *keda.ScaledObject:
			so := x.DeepCopy()
			so.Status = &keda.ScaledObjectStatus{LastActiveTime: &idleSince}
			o.ScaledObjects = append(o.ScaledObjects, *so)
		case *appsv1.Deployment: // the picker, up
			dep := x.DeepCopy()
			dep.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "True"}}}
			o.Deployments = append(o.Deployments, *dep)
		}
	}
	report := diagnosis.Diagnose(svc.Name, svc.Namespace, svc, o)
	assert.Equal(t, diagnosis.ScaledToZero, report.Phase, "%s", report.Text())
	assert.Equal(t, 0, report.ExitCode(), "a script waiting for the service goes on: a request wakes it")
	text := report.Text()
	assert.Contains(t, text, "InferenceService qwen-idle (namespace llm): scaled to zero\n")
	assert.Contains(t, text, "role server: scaled to zero, idle since 2026-11-29T18:00:00Z; a request through the router wakes it")
	assert.Regexp(t, `server +0/1 +qwen-idle-server-elastic +Idle +-`, text)
	assert.NotContains(t, text, "NoReadyEndpoint", "the router holds a request for a role at zero; it does not refuse it")

	o.ScaledObjects[0].Status = nil
	assert.Contains(t, diagnosis.Diagnose(svc.Name, svc.Namespace, svc, o).Text(), "role server: scaled to zero, no request has woken it yet")

	one := int32(1) // KEDA woke it: a replica on its way
	o.LeaderWorkerSets[0].Spec.Replicas = &one
	o.LeaderWorkerSets[0].Status.Conditions = nil
	woken := diagnosis.Diagnose(svc.Name, svc.Namespace, svc, o)
	assert.Equal(t, 2, woken.ExitCode(), "%s", woken.Text())
}
