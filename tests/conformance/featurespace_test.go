// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/featurespace"
)

// (e) of issue 42's invariants over the feature space: every object of the services of a covering
// array of all pairs of features (tests/kit/featurespace) is accepted by the API server in
// a server-side dry run, and every pod template in it (an LWS's leader and worker templates, a
// Job's, a Deployment's) is accepted as the template of a StatefulSet, as LWS makes of it: a CRD's
// schema does not check a pod template, the server's pod rules do (a GPU request without a limit).
func TestFeatureSpaceObjectsPassTheServersValidation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rows, _ := featurespace.CoveringArray(2, 1, 200, func(f featurespace.Features) error {
		if _, errs := api.Resolve(featurespace.Service(f)); len(errs) > 0 {
			return errs.ToAggregate()
		}
		return nil
	})
	require.GreaterOrEqual(t, len(rows), 20, "the covering array has services")
	statefulSets := "statefulsets"
	objects, templates := 0, 0
	for _, f := range rows {
		svc := featurespace.Service(f)
		tree, errs := render.Build(svc)
		require.Empty(t, errs, "%s", f)
		require.NoError(t, testCluster.ensureNamespace(ctx, svc.Namespace))
		for _, o := range tree.Objects {
			m, err := o.Unstructured()
			require.NoError(t, err)
			u := &unstructured.Unstructured{Object: m}
			r, err := testCluster.resource(u)
			require.NoError(t, err, "%s: %s %s", f, o.Kind, o.Name)
			_, err = r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
			assert.NoError(t, err, "service %s: the server refuses %s %s", f, o.Kind, o.Name)
			objects++
			for which, tpl := range podTemplates(o.Object) {
				sts := &appsv1.StatefulSet{
					TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
					ObjectMeta: metav1.ObjectMeta{Name: "featurespace", Namespace: svc.Namespace},
					Spec: appsv1.StatefulSetSpec{ServiceName: "featurespace", Template: *tpl.DeepCopy(),
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"featurespace": "pod"}}},
				}
				sts.Spec.Template.Labels = map[string]string{"featurespace": "pod"}
				sts.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways // a Job's OnFailure is not a StatefulSet's
				_, err := testCluster.client.Resource(appsv1.SchemeGroupVersion.WithResource(statefulSets)).Namespace(svc.Namespace).
					Create(ctx, mustUnstructured(t, sts), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				var status *apierrors.StatusError
				if err != nil && !errors.As(err, &status) {
					require.NoError(t, err)
				}
				assert.NoError(t, err, "service %s: the server refuses the pod template %s of %s %s", f, which, o.Kind, o.Name)
				templates++
			}
		}
	}
	progress("%d objects and %d pod templates of %d services of all pairs of features dry-run", objects, templates, len(rows))
}

// podTemplates are an object's pod templates, by which they are.
func podTemplates(obj any) map[string]*corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *lwsv1.LeaderWorkerSet:
		out := map[string]*corev1.PodTemplateSpec{"workerTemplate": &o.Spec.LeaderWorkerTemplate.WorkerTemplate}
		if o.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
			out["leaderTemplate"] = o.Spec.LeaderWorkerTemplate.LeaderTemplate
		}
		return out
	case *batchv1.Job:
		return map[string]*corev1.PodTemplateSpec{"template": &o.Spec.Template}
	case *appsv1.Deployment:
		return map[string]*corev1.PodTemplateSpec{"template": &o.Spec.Template}
	}
	return nil
}
