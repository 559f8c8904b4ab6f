// SPDX-License-Identifier: Apache-2.0

package diagnosis_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// TestObjectsInAGroupThePickerDoesNotWatch: the status names each rewrite and objective of the
// service's pool that the running Endpoint Picker ignores, being in another API group than the one
// its release watches on this cluster (or it reads no such kind), and fails the service: waiting
// will not help. Those it watches, those of another pool, and a cluster whose groups were not
// read say nothing.
func TestObjectsInAGroupThePickerDoesNotWatch(t *testing.T) {
	x, llmd := eppconfig.GroupInferenceX, eppconfig.GroupLLMD
	rewrite := func(group, pool string) func(o *diagnosis.Observed) {
		return func(o *diagnosis.Observed) {
			o.InferenceModelRewrites = append(o.InferenceModelRewrites, render.InferenceModelRewrite{
				TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1alpha2", Kind: eppconfig.KindModelRewrite},
				ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference-support", Namespace: "status-healthy"},
				Spec:       render.InferenceModelRewriteSpec{PoolRef: &inferencev1alpha2.PoolObjectReference{Name: inferencev1alpha2.ObjectName(pool)}}})
		}
	}
	objective := func(group, pool string) func(o *diagnosis.Observed) {
		return func(o *diagnosis.Observed) {
			o.InferenceObjectives = append(o.InferenceObjectives, inferencev1alpha2.InferenceObjective{
				TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1alpha2", Kind: eppconfig.KindObjective},
				ObjectMeta: metav1.ObjectMeta{Name: "critical", Namespace: "status-healthy"},
				Spec:       inferencev1alpha2.InferenceObjectiveSpec{PoolRef: inferencev1alpha2.PoolObjectReference{Name: inferencev1alpha2.ObjectName(pool)}}})
		}
	}
	served := func(groups ...string) func(o *diagnosis.Observed) {
		return func(o *diagnosis.Observed) {
			o.InferenceGroups = map[string][]string{eppconfig.KindObjective: groups, eppconfig.KindModelRewrite: groups}
		}
	}
	const pool = "qwen-inference-pool"
	cases := []struct {
		name    string
		release api.EndpointPickerRelease
		observe []func(o *diagnosis.Observed)
		want    string // the cause's text; empty: none
	}{
		{"llm-d-router on the Platform's CRDs reads the rewrite", api.EPPReleaseLLMDRouter,
			[]func(*diagnosis.Observed){served(x), rewrite(x, pool)}, ""},
		{"llm-d-router with both installed ignores the Inference Extension's rewrite", api.EPPReleaseLLMDRouter,
			[]func(*diagnosis.Observed){served(llmd, x), rewrite(x, pool)},
			"InferenceModelRewrite/qwen-inference-support: NotWatched: it is in inference.networking.x-k8s.io, and the Endpoint Picker " +
				"(llm-d-router-v0.10.0) watches InferenceModelRewrites in llm-d.ai on this cluster (which has their CRD in llm-d.ai and " +
				"inference.networking.x-k8s.io): it ignores this one, and requests for the model it rewrites get 404"},
		{"llm-d-router with both installed reads llm-d.ai's", api.EPPReleaseLLMDRouter,
			[]func(*diagnosis.Observed){served(llmd, x), rewrite(llmd, pool)}, ""},
		{"GIE v1.5.0 ignores llm-d.ai's", api.EPPReleaseGIE150,
			[]func(*diagnosis.Observed){served(llmd, x), rewrite(llmd, pool)},
			"InferenceModelRewrite/qwen-inference-support: NotWatched: it is in llm-d.ai, and the Endpoint Picker (gie-v1.5.0) watches " +
				"InferenceModelRewrites in inference.networking.x-k8s.io on this cluster"},
		{"GIE v1.2.0 reads no rewrite", api.EPPReleaseGIE,
			[]func(*diagnosis.Observed){served(x), rewrite(x, pool)},
			"InferenceModelRewrite/qwen-inference-support: NotWatched: it is in inference.networking.x-k8s.io, and the Endpoint Picker " +
				"(gie-v1.2.0) watches no InferenceModelRewrite on this cluster"},
		{"an objective llm-d-router ignores", api.EPPReleaseLLMDRouter,
			[]func(*diagnosis.Observed){served(llmd, x), objective(x, pool)},
			"InferenceObjective/critical: NotWatched: it is in inference.networking.x-k8s.io, and the Endpoint Picker " +
				"(llm-d-router-v0.10.0) watches InferenceObjectives in llm-d.ai on this cluster"},
		{"another pool's objective is not ours", api.EPPReleaseLLMDRouter,
			[]func(*diagnosis.Observed){served(llmd, x), objective(x, "other-pool")}, ""},
		{"groups not read: nothing said", api.EPPReleaseLLMDRouter,
			[]func(*diagnosis.Observed){rewrite(x, pool)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := story1Routed(t)
			svc.Spec.Router().EndpointPicker = &api.EndpointPicker{Release: tc.release}
			o := fixture(t, "healthy")
			// the fixture runs the spec's template (the router labels the servers)
			lws := &o.LeaderWorkerSets[0]
			lws.Labels[render.LabelRevision] = revisionOf(t, svc, lws.Name)
			for _, observe := range tc.observe {
				observe(o)
			}
			report := diagnosis.Diagnose("qwen-inference", "status-healthy", svc, o)
			text := report.Text()
			if tc.want == "" {
				assert.Equal(t, diagnosis.Running, report.Phase, text)
				assert.NotContains(t, text, "NotWatched")
				return
			}
			assert.Equal(t, diagnosis.Failed, report.Phase, text)
			assert.Contains(t, text, tc.want)
		})
	}
}

// TestRecordedObjectsKeepTheirGroup: a fixture records objectives and rewrites with their own
// API group, and reads them back so.
func TestRecordedObjectsKeepTheirGroup(t *testing.T) {
	o := &diagnosis.Observed{}
	for _, group := range diagnosis.InferenceGroups {
		o.InferenceObjectives = append(o.InferenceObjectives, inferencev1alpha2.InferenceObjective{
			TypeMeta: metav1.TypeMeta{APIVersion: group + "/v1alpha2", Kind: eppconfig.KindObjective}, ObjectMeta: metav1.ObjectMeta{Name: "o"}})
		o.InferenceModelRewrites = append(o.InferenceModelRewrites, render.InferenceModelRewrite{
			TypeMeta: metav1.TypeMeta{APIVersion: group + "/v1alpha2", Kind: eppconfig.KindModelRewrite}, ObjectMeta: metav1.ObjectMeta{Name: "r"}})
	}
	data, err := o.YAML()
	require.NoError(t, err)
	read, err := diagnosis.ReadObserved(data)
	require.NoError(t, err)
	require.Len(t, read.InferenceObjectives, 2)
	require.Len(t, read.InferenceModelRewrites, 2)
	for i, group := range diagnosis.InferenceGroups {
		assert.Equal(t, group+"/v1alpha2", read.InferenceObjectives[i].APIVersion)
		assert.Equal(t, group+"/v1alpha2", read.InferenceModelRewrites[i].APIVersion)
	}
}

// TestWithoutTheSpecTheDeploymentNamesTheRelease: `fusioninfer status --name`, without the spec,
// reads the running Endpoint Picker's release from its Deployment's annotation
// (render.AnnotationEndpointPickerRelease), and says of the rewrites it ignores what it would say
// with the spec; a Deployment without the annotation (rendered before it), one that names no
// release, or another Deployment's says nothing.
func TestWithoutTheSpecTheDeploymentNamesTheRelease(t *testing.T) {
	x, llmd := eppconfig.GroupInferenceX, eppconfig.GroupLLMD
	const pool = "qwen-inference-pool"
	rewriteIn := func(group string) render.InferenceModelRewrite {
		return render.InferenceModelRewrite{
			TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1alpha2", Kind: eppconfig.KindModelRewrite},
			ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference-support", Namespace: "status-healthy"},
			Spec:       render.InferenceModelRewriteSpec{PoolRef: &inferencev1alpha2.PoolObjectReference{Name: pool}}}
	}
	cases := []struct {
		name     string
		release  api.EndpointPickerRelease
		annotate func(annotations map[string]string) // the rendered Deployment's annotations, changed
		rename   string                              // the Deployment's name, if not the rendered one
		served   []string
		rewrite  string // its group
		want     string // the cause's text; empty: none
	}{
		{name: "llm-d-router with both installed ignores the Inference Extension's rewrite", release: api.EPPReleaseLLMDRouter,
			served: []string{llmd, x}, rewrite: x,
			want: "InferenceModelRewrite/qwen-inference-support: NotWatched: it is in inference.networking.x-k8s.io, and the Endpoint Picker " +
				"(llm-d-router-v0.10.0) watches InferenceModelRewrites in llm-d.ai on this cluster"},
		{name: "llm-d-router reads the rewrite in the group it watches", release: api.EPPReleaseLLMDRouter,
			served: []string{llmd, x}, rewrite: llmd},
		{name: "GIE v1.5.0 ignores llm-d.ai's", release: api.EPPReleaseGIE150, served: []string{llmd, x}, rewrite: llmd,
			want: "InferenceModelRewrite/qwen-inference-support: NotWatched: it is in llm-d.ai, and the Endpoint Picker (gie-v1.5.0) watches " +
				"InferenceModelRewrites in inference.networking.x-k8s.io on this cluster"},
		{name: "GIE v1.2.0 reads no rewrite", release: api.EPPReleaseGIE, served: []string{x}, rewrite: x,
			want: "(gie-v1.2.0) watches no InferenceModelRewrite on this cluster"},
		{name: "a Deployment rendered before the annotation says nothing", release: api.EPPReleaseLLMDRouter,
			annotate: func(a map[string]string) { delete(a, render.AnnotationEndpointPickerRelease) }, served: []string{llmd, x}, rewrite: x},
		{name: "a release no Endpoint Picker has says nothing", release: api.EPPReleaseLLMDRouter,
			annotate: func(a map[string]string) { a[render.AnnotationEndpointPickerRelease] = "llm-d-router-v9" }, served: []string{llmd, x}, rewrite: x},
		{name: "another Deployment's annotation is not the picker's", release: api.EPPReleaseLLMDRouter, rename: "qwen-inference-dual-pods-controller",
			served: []string{llmd, x}, rewrite: x},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := story1Routed(t)
			svc.Spec.Router().EndpointPicker = &api.EndpointPicker{Release: tc.release}
			epp := renderedDeployment(t, svc)
			require.Equal(t, string(tc.release), epp.Annotations[render.AnnotationEndpointPickerRelease], "the render names the release")
			if tc.annotate != nil {
				tc.annotate(epp.Annotations)
			}
			if tc.rename != "" {
				epp.Name = tc.rename
			}
			o := fixture(t, "healthy")
			o.Deployments = append(o.Deployments, *epp)
			o.InferenceGroups = map[string][]string{eppconfig.KindObjective: tc.served, eppconfig.KindModelRewrite: tc.served}
			o.InferenceModelRewrites = append(o.InferenceModelRewrites, rewriteIn(tc.rewrite))
			report := diagnosis.Diagnose("qwen-inference", "status-healthy", nil, o)
			text := report.Text()
			if tc.want == "" {
				assert.NotContains(t, text, "NotWatched")
				return
			}
			assert.Equal(t, diagnosis.Failed, report.Phase, text)
			assert.Contains(t, text, tc.want)
		})
	}
}

// renderedDeployment is the Endpoint Picker Deployment the service renders.
func renderedDeployment(t *testing.T, svc *api.InferenceService) *appsv1.Deployment {
	t.Helper()
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	for _, o := range tree.Objects {
		if dep, ok := o.Object.(*appsv1.Deployment); ok && dep.Name == api.EndpointPickerName(svc.Name) {
			return dep.DeepCopy()
		}
	}
	t.Fatal("no Endpoint Picker Deployment")
	return nil
}
