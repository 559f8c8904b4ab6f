// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// wideEPService is the shape of issue 34: prefill/decode DeepSeek-R1 behind a router, each replica
// 2 pods of 8 ranks, data parallel 16 with expert parallel.
func wideEPService() *InferenceService {
	dp := func() *Parallelism { return &Parallelism{Data: 16, DataLocal: 8, Expert: true} }
	return &InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deepseek-r1-wide-ep"},
		Spec: InferenceServiceSpec{Roles: []Role{
			{Name: "prefill", ComponentType: ComponentTypePrefiller, Multinode: &Multinode{NodeCount: 2}, Parallelism: dp(),
				Template: server("--model", "deepseek-ai/DeepSeek-R1", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`)},
			{Name: "decode", ComponentType: ComponentTypeDecoder, Multinode: &Multinode{NodeCount: 2}, Parallelism: dp(),
				Template: server("--model", "deepseek-ai/DeepSeek-R1", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`)},
			{Name: "router", ComponentType: ComponentTypeRouter, HTTPRoute: httpRoute(`{"parentRefs":[{"name":"inference-gateway"}]}`)},
		}},
	}
}

func TestWideEPServicePasses(t *testing.T) {
	assert.Empty(t, Validate(wideEPService()))
	svc := wideEPService()
	svc.Spec.Roles[0].Parallelism.DataLocal = 0 // data / nodeCount
	assert.Empty(t, Validate(svc))
	assert.Equal(t, int32(8), svc.Spec.Roles[0].LocalRanks())
	decode := &svc.Spec.Roles[1].Template.Spec.Containers[0]
	decode.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}
	decode.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{ // the server's port by name
		HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}}
	decode.Env = []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	assert.Empty(t, Validate(svc))
}

func TestParallelismRules(t *testing.T) {
	gpus := func(s *InferenceService, role int, n string) {
		s.Spec.Roles[role].Template.Spec.Containers[0].Resources.Limits[GPUResourceName] = resource.MustParse(n)
	}
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"data required", func(s *InferenceService) { s.Spec.Roles[0].Parallelism.Data = 0 },
			"spec.roles[0].parallelism.data: Required value: the data parallel ranks of one replica, at least 1"},
		{"data = dataLocal x nodeCount", func(s *InferenceService) { s.Spec.Roles[0].Parallelism.Data = 12 },
			"spec.roles[0].parallelism.data: Invalid value: 12: must equal dataLocal (8) x multinode.nodeCount (2) = 16"},
		{"data a multiple of nodeCount without dataLocal", func(s *InferenceService) {
			s.Spec.Roles[0].Parallelism.DataLocal = 0
			s.Spec.Roles[0].Parallelism.Data = 15
		}, "spec.roles[0].parallelism.data: Invalid value: 15: must be a multiple of multinode.nodeCount (2)"},
		{"sizes are positive", func(s *InferenceService) { s.Spec.Roles[1].Parallelism.Tensor = -1 },
			"spec.roles[1].parallelism.tensor: Invalid value: -1: must be at least 1 (or unset)"},
		{"rpc port is a port", func(s *InferenceService) { s.Spec.Roles[1].Parallelism.DataRPCPort = 70000 },
			"spec.roles[1].parallelism.dataRPCPort: Invalid value: 70000: must be between 1 and 65535, inclusive"},
		{"expert needs more than one GPU", func(s *InferenceService) {
			s.Spec.Roles[0].Multinode = nil
			s.Spec.Roles[0].Parallelism = &Parallelism{Data: 1, Expert: true}
			gpus(s, 0, "1")
		}, "spec.roles[0].parallelism.expert: Invalid value: true: expert parallel spreads the experts over data x tensor GPUs, here 1"},
		{"the ranks' GPUs are the server's", func(s *InferenceService) { gpus(s, 1, "4") },
			`spec.roles[1].parallelism: Invalid value: "dataLocal 8 x tensor 1 x pipeline 1": each pod runs 8 ranks of 1 GPUs = 8 GPUs, but the model server's nvidia.com/gpu limit is 4`},
		{"tensor counts in the ranks' GPUs", func(s *InferenceService) { s.Spec.Roles[1].Parallelism.Tensor = 2 },
			"each pod runs 8 ranks of 2 GPUs = 16 GPUs, but the model server's nvidia.com/gpu limit is 8"},
		{"at most 8 routed ranks a pod", func(s *InferenceService) {
			for i := range 2 {
				s.Spec.Roles[i].Multinode = nil
				s.Spec.Roles[i].Parallelism = &Parallelism{Data: 16}
				gpus(s, i, "16")
			}
		}, "spec.roles[0].parallelism.dataLocal: Invalid value: 16: behind a router each rank of a pod is a port of the InferencePool, which lists at most 8"},
		{"the pool's roles run as many ranks", func(s *InferenceService) {
			s.Spec.Roles[1].Multinode.NodeCount = 4
			s.Spec.Roles[1].Parallelism = &Parallelism{Data: 16, DataLocal: 4}
			gpus(s, 1, "4")
		}, "spec.roles[1].parallelism.dataLocal: Invalid value: 4: the InferencePool targets the same ports on every serving role, one a rank: 8 ranks a pod, as spec.roles[0] runs"},
		{"the rendered flags are not given again", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "--data-parallel-size", "16")
		}, `spec.roles[0].template.spec.containers[0].args: Invalid value: "--data-parallel-size": parallelism gives every rank --data-parallel-size: remove it`},
		{"nor their aliases", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "-tp=2")
		}, `args: Invalid value: "--tensor-parallel-size": parallelism gives every rank --tensor-parallel-size`},
		{"a multi-node replica restarts whole", func(s *InferenceService) { s.Spec.Roles[0].RestartPolicy = "None" },
			`spec.roles[0].restartPolicy: Invalid value: "None": a multi-node data parallel replica's ranks form one group: ` +
				`a rank whose pod restarts alone cannot join it again, and the other pods' ranks wait for it forever: ` +
				`remove restartPolicy (RecreateGroupOnPodRestart restarts the whole replica)`},
		{"nor their underscore spellings", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "--data_parallel_size=16")
		}, `args: Invalid value: "--data-parallel-size": parallelism gives every rank --data-parallel-size`},
		{"nor boolean flags", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "--enable-expert-parallel")
		}, `args: Invalid value: "--enable-expert-parallel"`},
		{"no shell script", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Command, c.Args = []string{"sh", "-c"}, []string{"vllm serve x"}
		}, "spec.roles[0].template.spec.containers[0].command: Invalid value: [\"sh\",\"-c\"]: parallelism launches one `vllm serve` a rank"},
		{"rpc port off the ranks' ports", func(s *InferenceService) { s.Spec.Roles[0].Parallelism.DataRPCPort = 8003 },
			"spec.roles[0].parallelism.dataRPCPort: Invalid value: 8003: is one of the ranks' HTTP ports, 8000-8007"},
		{"no other port on the ranks'", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "metrics", ContainerPort: 8005}}
		}, "spec.roles[0].template.spec.containers[0].ports[1].containerPort: Invalid value: 8005: is local rank 5's HTTP port (the server's port + 5): choose a port off 8000-8007"},
		{"nor on the RPC port", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers = append(s.Spec.Roles[0].Template.Spec.Containers,
				corev1.Container{Name: "exporter", Image: "exporter", Ports: []corev1.ContainerPort{{ContainerPort: 29550}}})
		}, "spec.roles[0].template.spec.containers[1].ports[0].containerPort: Invalid value: 29550: is the ranks' RPC port (parallelism.dataRPCPort): choose another"},
		{"the ranks' leader is not ready alone", func(s *InferenceService) {
			s.Spec.Roles[0].StartupPolicy = "LeaderReady"
			s.Spec.Roles[0].Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
		}, "spec.roles[0].startupPolicy: Invalid value: \"LeaderReady\": would never start: the leader's ranks become ready only once every rank of the replica has joined"},
		{"the ranks' leader is not ready alone, without a probe of the template's either", func(s *InferenceService) {
			s.Spec.Roles[0].StartupPolicy = "LeaderReady"
			s.Spec.Roles[0].Template.Spec.Containers[0].ReadinessProbe = nil // the ranks get GET /health
		}, "spec.roles[0].startupPolicy: Invalid value: \"LeaderReady\": would never start: the leader's ranks become ready only once every rank of the replica has joined"},
		{"a readiness probe every rank can answer", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8000)}}}
		}, "spec.roles[0].template.spec.containers[0].readinessProbe.tcpSocket: Invalid value: \"(the probe)\": a data parallel pod is ready when every rank answers: " +
			"the launch sends the readiness probe's HTTP GET to each rank's port (8000-8007); give an httpGet on the server's port 8000 (vLLM serves /health), " +
			"or no readiness probe for GET /health"},
		{"nor an exec probe", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec: &corev1.ExecAction{Command: []string{"curl", "-f", "localhost:8000/health"}}}}
		}, "spec.roles[1].template.spec.containers[0].readinessProbe.exec: Invalid value: \"(the probe)\""},
		{"the probe's GET on the server's port", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8001)}}}
		}, "spec.roles[0].template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: \"8001\": must be the server's port, 8000 (local rank 0's): " +
			"the launch sends the probe's GET to every rank's port, 8000-8007"},
		{"POD_IP is the pod's address", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "POD_IP", Value: "10.0.0.1"})
		}, "spec.roles[0].template.spec.containers[0].env[0]: Invalid value: \"POD_IP\": the ranks' readiness probe reads the pod's address from POD_IP: " +
			"remove it, or give it the pod's address (valueFrom.fieldRef.fieldPath status.podIP)"},
		{"ranks' ports fit", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "--port", "65530")
		}, "spec.roles[0].parallelism.dataLocal: Invalid value: 8: local rank i serves on the server's port (65530) + i, past 65535"},
		{"decode ranks off the sidecar's", func(s *InferenceService) {
			for i := range 2 {
				c := &s.Spec.Roles[i].Template.Spec.Containers[0]
				c.Args = append(c.Args, "--port", "8195")
			}
		}, "spec.roles[1].template.spec.containers[0].ports: Invalid value: 8195: behind a router, the routing sidecar serves the ranks' ports 8195-8202 and the decode ranks move to 8200-8207"},
		{"decode rpc port off the moved ranks'", func(s *InferenceService) { s.Spec.Roles[1].Parallelism.DataRPCPort = 8201 },
			"spec.roles[1].parallelism.dataRPCPort: Invalid value: 8201: behind a router, the decode ranks serve on 8200-8207"},
		{"the sidecar's ranks need llm-d-router", func(s *InferenceService) {
			s.Spec.Roles[2].EndpointPicker = &EndpointPicker{Release: EPPReleaseGIE}
		}, "spec.roles[1].parallelism.dataLocal: Invalid value: 8: behind a router, a decode pod's ranks are fronted by llm-d-router's disaggregation sidecar"},
		{"ranks need a pool of several ports", func(s *InferenceService) { s.Spec.Roles[2].PoolAPIVersion = PoolV1Alpha2 },
			"spec.roles[0].parallelism.dataLocal: Invalid value: 8: each rank of a pod is a port of the InferencePool, and a v1alpha2 pool targets one port"},
		{"not with dual pods", func(s *InferenceService) {
			s.Spec.Roles[0].ModelFlexibility = &ModelFlexibility{}
		}, "spec.roles[0].parallelism: Forbidden: a dual-pods role's servers run in pods FMA makes"},
		{"a router role has none", func(s *InferenceService) { s.Spec.Roles[2].Parallelism = &Parallelism{Data: 2} },
			"spec.roles[2].parallelism: Forbidden"},
		{"replicas stay whole", func(s *InferenceService) { s.Spec.Roles[0].Replicas = ptr.To(0) }, "spec.roles[0].replicas"},
		{"the shared memory's volume name is ours", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Volumes = []corev1.Volume{{Name: SharedMemoryVolumeName}}
		}, `spec.roles[0].template.spec.volumes[0].name: Invalid value: "fusioninfer-shm": a data parallel server's shared memory has this name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, wideEPService, tc.mutate, tc.want) })
	}
}
