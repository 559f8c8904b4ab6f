// SPDX-License-Identifier: Apache-2.0

package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
)

func oneGPUServer(args ...string) *corev1.PodTemplateSpec {
	tpl := server(args...)
	tpl.Spec.Containers[0].Resources.Limits[GPUResourceName] = resource.MustParse("1")
	return tpl
}

// preciseService: Qwen3 8B from the Hub by the servers' own --model, two worker roles behind a
// standalone router with strategy precise-prefix-cache.
func preciseService() *InferenceService {
	return &InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "llm"},
		Spec: InferenceServiceSpec{Roles: []Role{
			{Name: "a", ComponentType: ComponentTypeWorker, Replicas: ptr.To(2), Template: oneGPUServer("--model", "Qwen/Qwen3-8B")},
			{Name: "b", ComponentType: ComponentTypeWorker, Replicas: ptr.To(1), Template: oneGPUServer("--model", "Qwen/Qwen3-8B")},
			{Name: "router", ComponentType: ComponentTypeRouter, Strategy: eppconfig.StrategyPrecisePrefixCache},
		}},
	}
}

// TestThePresetAgreesWithTheServers: what the servers publish and the picker indexes is one
// agreement, made from the servers' own flags where they give them, else the defaults.
func TestThePresetAgreesWithTheServers(t *testing.T) {
	resolved, errs := Resolve(preciseService())
	require.Empty(t, errs)
	assert.Equal(t, &eppconfig.KVEvents{Model: "Qwen/Qwen3-8B", TokenizerURL: "http://qwen-tokenizer:8000", BlockSize: 64, HashSeed: "42",
		SocketPort: 5557, TopicFilter: "kv@"}, resolved.Routing.KVEvents)

	svc := preciseService()
	for i := range 2 {
		c := &svc.Spec.Roles[i].Template.Spec.Containers[0]
		c.Args = append(c.Args, "--block-size", "32", "--served-model-name", "qwen3")
		c.Env = []corev1.EnvVar{{Name: PythonHashSeedVariable, Value: "7"}}
	}
	resolved, errs = Resolve(svc)
	require.Empty(t, errs)
	kv := resolved.Routing.KVEvents
	assert.Equal(t, []any{"qwen3", 32, "7"}, []any{kv.Model, kv.BlockSize, kv.HashSeed}, "the servers' own")
	text, err := resolved.Routing.Selection.Text()
	require.NoError(t, err)
	assert.Contains(t, text, "blockSizeTokens: 32")
	assert.Contains(t, text, `hashSeed: "7"`)
	assert.Contains(t, text, "modelName: qwen3")
}

// TestPreciseRoutingRules: each input no server could publish as the picker expects is refused at
// its field, saying why.
func TestPreciseRoutingRules(t *testing.T) {
	serverOf := func(s *InferenceService, i int) *corev1.Container {
		return &s.Spec.Roles[i].Template.Spec.Containers[0]
	}
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"a release without the producer", func(s *InferenceService) {
			s.Spec.Roles[2].EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE150}
		}, `spec.roles[2].strategy: Invalid value: "precise-prefix-cache": the Endpoint Picker of gie-v1.5.0 has no precise-prefix-cache-producer`},
		{"block sizes that disagree", func(s *InferenceService) {
			serverOf(s, 0).Args = append(serverOf(s, 0).Args, "--block-size", "32")
			serverOf(s, 1).Args = append(serverOf(s, 1).Args, "--block-size=16")
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "--block-size 16": the picker hashes a prompt's KV blocks of 32 tokens (as spec.roles[0].template.spec.containers[0].args gives it)`},
		{"the events flag given", func(s *InferenceService) {
			serverOf(s, 1).Args = append(serverOf(s, 1).Args, "--kv-events-config", "{}")
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "--kv-events-config": spec.roles[2].strategy is precise-prefix-cache, which gives every server (every rank) its --kv-events-config`},
		{"prefix caching off", func(s *InferenceService) {
			serverOf(s, 0).Args = append(serverOf(s, 0).Args, "--no-enable-prefix-caching")
		}, `spec.roles[0].template.spec.containers[0].args: Invalid value: "--no-enable-prefix-caching": spec.roles[2].strategy is precise-prefix-cache: a server without prefix caching hashes no block`},
		{"seeds that disagree", func(s *InferenceService) {
			serverOf(s, 0).Env = []corev1.EnvVar{{Name: PythonHashSeedVariable, Value: "1"}}
			serverOf(s, 1).Env = []corev1.EnvVar{{Name: PythonHashSeedVariable, Value: "2"}}
		}, `spec.roles[1].template.spec.containers[0].env[0].value: Invalid value: "2": the picker hashes a prompt's first block with seed "1"`},
		{"a seed from a secret", func(s *InferenceService) {
			serverOf(s, 0).Env = []corev1.EnvVar{{Name: PythonHashSeedVariable, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "seed"}}}}
		}, `spec.roles[0].template.spec.containers[0].env[0].valueFrom: Invalid value: "(a reference)"`},
		{"a server in a script", func(s *InferenceService) {
			serverOf(s, 0).Command = []string{"sh", "-c"}
			serverOf(s, 0).Args = []string{"exec vllm serve Qwen/Qwen3-8B"}
		}, `spec.roles[0].template.spec.containers[0].command: Invalid value: ["sh","-c"]: spec.roles[2].strategy is precise-prefix-cache: each server is given where to publish`},
		{"a port of the events", func(s *InferenceService) {
			serverOf(s, 1).Ports = append(serverOf(s, 1).Ports, corev1.ContainerPort{Name: "zmq", ContainerPort: 5557})
		}, `spec.roles[1].template.spec.containers[0].ports[0].containerPort: Invalid value: 5557: the servers publish their KV-cache events on 5557`},
		{"a server serving on the events port", func(s *InferenceService) {
			for i := range 2 {
				serverOf(s, i).Args = append(serverOf(s, i).Args, "--port", "5557")
			}
		}, `spec.roles[0]: Invalid value: "a": its ranks publish their KV-cache events on 5557 (strategy precise-prefix-cache), and 5557 is also a rank's serving port`},
		{"two models", func(s *InferenceService) {
			serverOf(s, 1).Args = []string{"--model", "Qwen/Qwen3-14B"}
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "Qwen/Qwen3-14B": spec.roles[2].strategy is precise-prefix-cache: the picker tokenizes for one model`},
		{"a model at a path", func(s *InferenceService) {
			serverOf(s, 0).Args = []string{"--model", "/mnt/qwen"}
		}, `spec.roles[0].template.spec.containers[0].args: Invalid value: "/mnt/qwen": spec.roles[2].strategy is precise-prefix-cache: the tokenizer Deployment cannot read a path`},
		{"a streamed model", func(s *InferenceService) {
			s.Spec.Model = &Model{Source: "s3://models/qwen", LoadFormat: RunaiStreamer}
			for i := range 2 {
				serverOf(s, i).Args = nil
			}
		}, `spec.model.loadFormat: Invalid value: "runai_streamer": spec.roles[2].strategy is precise-prefix-cache: its tokenizer Deployment reads the model's tokenizer from the model's files`},
		{"a configuration without the producer", func(s *InferenceService) {
			s.Spec.Roles[2].EndpointPickerConfig = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\nschedulingProfiles:\n- name: default\n  plugins: [{pluginRef: queue-scorer}]\n"
		}, `spec.roles[2].endpointPickerConfig: Invalid value: "(the configuration)": strategy precise-prefix-cache indexes the servers' KV-cache events with a precise-prefix-cache-producer: the configuration has none`},
		{"a configuration whose blocks are not the servers'", func(s *InferenceService) {
			s.Spec.Roles[2].EndpointPickerConfig = "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" +
				"- type: token-producer\n  parameters: {modelName: Qwen/Qwen3-8B, vllm: {url: 'http://t:8000'}}\n" +
				"- type: precise-prefix-cache-producer\n  parameters: {tokenProcessorConfig: {blockSizeTokens: 16}}\n" +
				"- type: prefix-cache-scorer\n  parameters: {prefixMatchInfoProducerName: precise-prefix-cache-producer}\n" +
				"schedulingProfiles:\n- name: default\n  plugins: [{pluginRef: prefix-cache-scorer}]\n"
			serverOf(s, 0).Args = append(serverOf(s, 0).Args, "--block-size", "64")
		}, `spec.roles[0].template.spec.containers[0].args: Invalid value: "--block-size 64": the picker hashes a prompt's KV blocks of 16 tokens (its configuration's tokenProcessorConfig.blockSizeTokens)`},
		{"a tokenizer name too long", func(s *InferenceService) { s.Name = strings.Repeat("q", 54) },
			`spec.roles[2]: Invalid value: "router": the router's Service "` + strings.Repeat("q", 54) + `-tokenizer" is 64 characters`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, preciseService, tc.mutate, tc.want) })
	}
}
