// SPDX-License-Identifier: Apache-2.0

package platform_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	lwsconfig "sigs.k8s.io/lws/api/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

var update = flag.Bool("update", false, "rewrite the golden file from the current output")

func off() *bool { f := false; return &f }
func on() *bool  { t := true; return &t }

func render(t *testing.T, spec *platform.Spec) []platform.Object {
	t.Helper()
	objects, err := platform.Render(spec)
	require.NoError(t, err)
	return objects
}

func find(objects []platform.Object, key string) *unstructured.Unstructured {
	for _, o := range objects {
		if o.Key() == key {
			return o.Object
		}
	}
	return nil
}

// kindsOf counts each part's objects by kind.
func kindsOf(objects []platform.Object) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, o := range objects {
		if out[o.Part] == nil {
			out[o.Part] = map[string]int{}
		}
		out[o.Part][o.Object.GetKind()]++
	}
	return out
}

// crdNames are the names of the CRDs rendered.
func crdNames(objects []platform.Object) []string {
	var names []string
	for _, o := range objects {
		if o.Object.GetKind() == "CustomResourceDefinition" {
			names = append(names, o.Object.GetName())
		}
	}
	return names
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		spec platform.Spec
		want []string // field paths of the errors, in order
	}{
		{"empty spec: everything", platform.Spec{}, nil},
		{"one part left out", platform.Spec{KEDA: &platform.Part{Install: off()}}, nil},
		{"nothing to install", platform.Spec{
			LeaderWorkerSet: &platform.Part{Install: off()}, Volcano: &platform.VolcanoPart{Install: off()},
			InferenceExtension: &platform.Part{Install: off()}, KEDA: &platform.Part{Install: off()},
			PrometheusOperatorCRDs: &platform.Part{Install: off()},
		}, []string{"leaderWorkerSet.install"}},
		{"scheduler configuration with everything the gang needs", platform.Spec{Volcano: &platform.VolcanoPart{
			SchedulerConfiguration: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n  - name: proportion\n"}}, nil},
		{"scheduler configuration with arguments it does not read", platform.Spec{Volcano: &platform.VolcanoPart{
			SchedulerConfiguration: "actions: enqueue,allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePreemptable: false\n  - name: predicates\n  - name: proportion\nconfigurations: []\n"}}, nil},
		{"no gang plugin", platform.Spec{Volcano: &platform.VolcanoPart{
			SchedulerConfiguration: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: predicates\n  - name: proportion\n"}},
			[]string{"volcano.schedulerConfiguration.tiers"}},
		{"no enqueue and no proportion", platform.Spec{Volcano: &platform.VolcanoPart{
			SchedulerConfiguration: "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"}},
			[]string{"volcano.schedulerConfiguration.actions", "volcano.schedulerConfiguration.tiers"}},
		{"not YAML", platform.Spec{Volcano: &platform.VolcanoPart{SchedulerConfiguration: "actions: [unclosed"}},
			[]string{"volcano.schedulerConfiguration"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, err := range platform.Validate(&c.spec) {
				got = append(got, err.Field)
			}
			require.Equal(t, c.want, got)
			_, err := platform.Render(&c.spec)
			if c.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, c.want[0], "Render refuses what Validate refuses")
			}
		})
	}
}

func TestDecodeRefusesUnknownFields(t *testing.T) {
	spec, err := platform.Decode([]byte("keda: {install: false}\nvolcano: {schedulerConfiguration: x}\n"))
	require.NoError(t, err)
	require.False(t, spec.Installs(platform.PartKEDA))
	require.True(t, spec.Installs(platform.PartLeaderWorkerSet))
	_, err = platform.Decode([]byte("volcano: {instal: false}\n"))
	require.ErrorContains(t, err, `unknown field "volcano.instal"`)
}

// TestParts: which objects each switch renders.
func TestParts(t *testing.T) {
	all := render(t, &platform.Spec{})
	kinds := kindsOf(all)
	require.Equal(t, map[string]int{"CustomResourceDefinition": 6}, kinds[platform.PartInferenceExtension])
	require.Equal(t, []string{"inferencepools.inference.networking.k8s.io", "inferencepools.inference.networking.x-k8s.io",
		"inferenceobjectives.inference.networking.x-k8s.io", "inferencemodelrewrites.inference.networking.x-k8s.io",
		"inferenceobjectives.llm-d.ai", "inferencemodelrewrites.llm-d.ai"}, crdNames(render(t, &platform.Spec{
		LeaderWorkerSet: &platform.Part{Install: off()}, Volcano: &platform.VolcanoPart{Install: off()},
		KEDA: &platform.Part{Install: off()}, PrometheusOperatorCRDs: &platform.Part{Install: off()},
	})))
	require.Equal(t, map[string]int{"CustomResourceDefinition": 1}, kinds[platform.PartPrometheusOperatorCRDs])
	require.NotContains(t, kinds, platform.PartGatewayAPI, "the Gateway API only when asked for")
	gatewayAPI := kindsOf(render(t, &platform.Spec{GatewayAPI: &platform.OptionalPart{Install: on()}}))[platform.PartGatewayAPI]
	require.Equal(t, map[string]int{"CustomResourceDefinition": 8, "ValidatingAdmissionPolicy": 1,
		"ValidatingAdmissionPolicyBinding": 1}, gatewayAPI)
	require.Equal(t, []string{"backendtlspolicies.gateway.networking.k8s.io", "gatewayclasses.gateway.networking.k8s.io",
		"gateways.gateway.networking.k8s.io", "grpcroutes.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io",
		"listenersets.gateway.networking.k8s.io", "referencegrants.gateway.networking.k8s.io", "tlsroutes.gateway.networking.k8s.io"},
		slices.Sorted(slices.Values(crdNames(render(t, &platform.Spec{
			LeaderWorkerSet: &platform.Part{Install: off()}, Volcano: &platform.VolcanoPart{Install: off()},
			InferenceExtension: &platform.Part{Install: off()}, KEDA: &platform.Part{Install: off()},
			PrometheusOperatorCRDs: &platform.Part{Install: off()}, GatewayAPI: &platform.OptionalPart{Install: on()},
		})))))
	require.Equal(t, 1, kinds[platform.PartLeaderWorkerSet]["Deployment"])
	require.Equal(t, 3, kinds[platform.PartVolcano]["Deployment"])
	require.Equal(t, 3, kinds[platform.PartKEDA]["Deployment"])
	for _, name := range []string{"leaderworkersets.leaderworkerset.x-k8s.io", "podgroups.scheduling.volcano.sh",
		"queues.scheduling.volcano.sh", "hypernodes.topology.volcano.sh", "scaledobjects.keda.sh", "podmonitors.monitoring.coreos.com"} {
		require.Contains(t, crdNames(all), name)
	}

	withoutKEDA := render(t, &platform.Spec{KEDA: &platform.Part{Install: off()}})
	require.NotContains(t, kindsOf(withoutKEDA), platform.PartKEDA)
	require.Len(t, withoutKEDA, len(all)-len(render(t, &platform.Spec{
		LeaderWorkerSet: &platform.Part{Install: off()}, Volcano: &platform.VolcanoPart{Install: off()},
		InferenceExtension: &platform.Part{Install: off()}, PrometheusOperatorCRDs: &platform.Part{Install: off()},
	})))

	// Without controllers: what a controller running elsewhere needs, and nothing that runs.
	bare := render(t, &platform.Spec{Controllers: off()})
	for part, byKind := range kindsOf(bare) {
		for _, kind := range []string{"Deployment", "Service", "Job", "Secret", "APIService"} {
			require.Zero(t, byKind[kind], "%s: %s", part, kind)
		}
	}
	require.Equal(t, crdNames(all), crdNames(bare))
	require.NotNil(t, find(bare, "ClusterRole/lws-manager-role"))
	require.NotNil(t, find(bare, "MutatingWebhookConfiguration/lws-mutating-webhook-configuration"))
	require.NotNil(t, find(bare, "ConfigMap/volcano-system/volcano-scheduler-configmap"))
}

// TestOrder: a part's namespace and CRDs come first (Foundation), then what refers to them;
// objects are listed part by part.
func TestOrder(t *testing.T) {
	objects := render(t, &platform.Spec{GatewayAPI: &platform.OptionalPart{Install: on()}})
	var parts []string
	for _, o := range objects {
		if len(parts) == 0 || parts[len(parts)-1] != o.Part {
			require.NotContains(t, parts, o.Part, "a part's objects are together")
			parts = append(parts, o.Part)
		}
	}
	require.Equal(t, platform.Parts, parts)
	for i, o := range objects {
		if i > 0 && o.Foundation && objects[i-1].Part == o.Part {
			require.True(t, objects[i-1].Foundation, "%s after %s", o.Key(), objects[i-1].Key())
		}
		kind := o.Object.GetKind()
		require.Equal(t, kind == "Namespace" || kind == "CustomResourceDefinition", o.Foundation, o.Key())
	}
	require.Equal(t, "Namespace/lws-system", objects[0].Key())
}

// TestLeaderWorkerSetGangSchedulingOff: the LWS controller's configuration is LWS's own type,
// with leader election and certificate management as upstream and no gang scheduling provider.
func TestLeaderWorkerSetGangSchedulingOff(t *testing.T) {
	cm := find(render(t, &platform.Spec{}), "ConfigMap/"+platform.LeaderWorkerSetNamespace+"/"+platform.LeaderWorkerSetConfigMap)
	require.NotNil(t, cm)
	text, _, _ := unstructured.NestedString(cm.Object, "data", platform.LeaderWorkerSetConfigKey)
	var config lwsconfig.Configuration
	require.NoError(t, yaml.UnmarshalStrict([]byte(text), &config), text)
	require.Nil(t, config.GangSchedulingManagement, text)
	require.Equal(t, "config.lws.x-k8s.io/v1alpha1", config.APIVersion)
	require.True(t, *config.LeaderElection.LeaderElect)
	require.True(t, *config.InternalCertManagement.Enable)
}

// TestVolcanoSchedulerConfiguration: Volcano's default is kept, it passes the gang rules' check,
// and a configuration of the spec replaces it.
func TestVolcanoSchedulerConfiguration(t *testing.T) {
	key := "ConfigMap/" + platform.VolcanoNamespace + "/" + platform.VolcanoSchedulerConfigMap
	conf := func(objects []platform.Object) string {
		text, _, _ := unstructured.NestedString(find(objects, key).Object, "data", platform.VolcanoSchedulerConfigKey)
		return text
	}
	upstream := conf(render(t, &platform.Spec{}))
	require.Contains(t, upstream, "name: gang")
	require.Empty(t, platform.Validate(&platform.Spec{Volcano: &platform.VolcanoPart{SchedulerConfiguration: upstream}}))
	mine := strings.Replace(upstream, "- name: binpack", "- name: network-topology-aware", 1)
	require.Equal(t, mine, conf(render(t, &platform.Spec{Volcano: &platform.VolcanoPart{SchedulerConfiguration: mine}})))
}

// TestImagesPinned: every controller's image is the version the e2e runs.
func TestImagesPinned(t *testing.T) {
	want := map[string]string{
		platform.PartLeaderWorkerSet: ":v0.9.0", platform.PartVolcano: ":v1.14.1", platform.PartKEDA: ":2.21.0",
	}
	count := 0
	for _, o := range render(t, &platform.Spec{}) {
		if o.Object.GetKind() != "Deployment" && o.Object.GetKind() != "Job" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			image := c.(map[string]any)["image"].(string)
			require.True(t, strings.HasSuffix(image, want[o.Part]), "%s: %s", o.Key(), image)
			count++
		}
	}
	require.Equal(t, 8, count)
	require.Equal(t, []string{"sigs.k8s.io/lws@v0.9.0", "volcano.sh/volcano@v1.14.1", "github.com/kedacore/keda/v2@v2.21.0",
		"sigs.k8s.io/gateway-api-inference-extension@v1.2.0", "sigs.k8s.io/gateway-api-inference-extension@v1.5.0",
		"sigs.k8s.io/gateway-api@v1.5.1", "github.com/prometheus-operator/prometheus-operator@v0.88.0"},
		platform.Versions())
}

// TestDeterministic: two renders are the same YAML.
func TestDeterministic(t *testing.T) {
	a, err := platform.YAML(render(t, &platform.Spec{}))
	require.NoError(t, err)
	b, err := platform.YAML(render(t, &platform.Spec{}))
	require.NoError(t, err)
	require.Equal(t, a, b)
}

// TestGolden holds the whole rendered platform: each object's part, key and a hash of its
// contents, and the contents of every object that is not a CRD (the CRDs are upstream's files,
// unchanged; their hashes hold them). After an intended change: go test ./core/platform
// -run TestGolden -update, and review the diff.
func TestGolden(t *testing.T) {
	for name, spec := range map[string]*platform.Spec{
		"all":                 {GatewayAPI: &platform.OptionalPart{Install: on()}},
		"without-controllers": {Controllers: off()},
	} {
		t.Run(name, func(t *testing.T) {
			var index strings.Builder
			var bodies []platform.Object
			for _, o := range render(t, spec) {
				data, err := json.Marshal(o.Object.Object)
				require.NoError(t, err)
				sum := sha256.Sum256(data)
				fmt.Fprintf(&index, "# %s %s %s\n", o.Part, o.Key(), hex.EncodeToString(sum[:8]))
				if o.Object.GetKind() != "CustomResourceDefinition" {
					bodies = append(bodies, o)
				}
			}
			body, err := platform.YAML(bodies)
			require.NoError(t, err)
			got := index.String() + string(body)
			golden := filepath.Join("testdata", name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file; run with -update")
			require.Equal(t, string(want), got)
		})
	}
}

// Every key is unique (Render checks it too) and every part is listed once in Parts.
func TestKeysUnique(t *testing.T) {
	var keys []string
	for _, o := range render(t, &platform.Spec{}) {
		require.NotContains(t, keys, o.Key())
		keys = append(keys, o.Key())
	}
	require.Equal(t, len(platform.Parts), len(slices.Compact(slices.Clone(platform.Parts))))
}

// TestTheRouterDefaultIsTheInstalledCRDGroups: the Platform installs the InferenceObjective and
// InferenceModelRewrite CRDs in exactly the groups a router's endpointPicker.crdGroups says by
// default, so that on a cluster the Platform set up, a split's rewrite is rendered in the group
// every release's Endpoint Picker watches there (with both sets llm-d-router v0.10.0 watches
// llm-d.ai and ignores the rewrites of inference.networking.x-k8s.io, issue 55).
func TestTheRouterDefaultIsTheInstalledCRDGroups(t *testing.T) {
	groups := map[string][]string{}
	for _, o := range render(t, &platform.Spec{}) {
		if o.Object.GetKind() != "CustomResourceDefinition" {
			continue
		}
		kind, _, _ := unstructured.NestedString(o.Object.Object, "spec", "names", "kind")
		group, _, _ := unstructured.NestedString(o.Object.Object, "spec", "group")
		if kind == eppconfig.KindObjective || kind == eppconfig.KindModelRewrite {
			groups[kind] = append(groups[kind], group)
		}
	}
	want := api.DefaultEndpointPickerCRDGroups.Groups()
	slices.Sort(want)
	for _, kind := range []string{eppconfig.KindObjective, eppconfig.KindModelRewrite} {
		slices.Sort(groups[kind])
		require.Equal(t, want, groups[kind], "the groups of the %s CRDs the Platform installs", kind)
	}
}
