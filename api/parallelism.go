// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// MaxRoutedLocalRanks is the most ranks a routed pod runs: each rank is a port of the pod, and an
// InferencePool lists at most 8 (gateway-api-inference-extension api/v1/inferencepool_types.go,
// InferencePoolSpec.TargetPorts, MaxItems=8).
const MaxRoutedLocalRanks = 8

// DataParallel reports whether the role runs vLLM's own data parallel launch (parallelism), not Ray.
func (r *Role) DataParallel() bool { return r.Parallelism != nil }

// LocalRanks are the data parallel ranks each pod of the role runs: parallelism.dataLocal, else
// data / nodeCount; 1 without parallelism (one server a pod).
func (r *Role) LocalRanks() int32 {
	switch {
	case r.Parallelism == nil:
		return 1
	case r.Parallelism.DataLocal > 0:
		return int32(r.Parallelism.DataLocal)
	case r.NodeCount() > 0 && r.Parallelism.Data >= int(r.NodeCount()):
		return int32(r.Parallelism.Data) / r.NodeCount()
	}
	return 1
}

// TensorSize is parallelism.tensor, 1 when unset.
func (p *Parallelism) TensorSize() int {
	if p.Tensor == 0 {
		return DefaultParallelismTensor
	}
	return p.Tensor
}

// PipelineSize is parallelism.pipeline, 1 when unset.
func (p *Parallelism) PipelineSize() int {
	if p.Pipeline == 0 {
		return DefaultParallelismPipeline
	}
	return p.Pipeline
}

// RankGPUs are the GPUs of one rank: tensor x pipeline (vLLM gives each data parallel engine
// that many worker processes, docs/serving/data_parallel_deployment.md).
func (p *Parallelism) RankGPUs() int { return p.TensorSize() * p.PipelineSize() }

// RPCPort is parallelism.dataRPCPort, vLLM's 29550 when unset.
func (p *Parallelism) RPCPort() int32 {
	if p.DataRPCPort == 0 {
		return DefaultParallelismDataRPCPort
	}
	return int32(p.DataRPCPort)
}

// RankPorts are the HTTP ports of a pod's ranks: local rank i serves on base + i.
func RankPorts(base, ranks int32) []int32 {
	ports := make([]int32, ranks)
	for i := range ports {
		ports[i] = base + int32(i)
	}
	return ports
}

// SharedMemoryVolumeName is a data parallel server's /dev/shm, a memory-backed emptyDir the render
// mounts when the template mounts none there (render's sharedMemory); a template may not use it.
const SharedMemoryVolumeName = "fusioninfer-shm"

// VLLMHealthPath is vLLM's health endpoint (vllm/entrypoints/openai/api_server.py, GET /health:
// 200 while the engine runs): what a data parallel pod's ranks are asked without a readiness probe.
const VLLMHealthPath = "/health"

// PodIPVariable is the variable a data parallel server gets the pod's address in (the downward
// API's status.podIP): its readiness probe asks each rank at the pod's address, on which vLLM
// listens, as the kubelet's HTTP prober does.
const PodIPVariable = "POD_IP"

// RankHealthGet is the HTTP GET a data parallel pod's readiness probe sends each of its ranks:
// the server's readiness probe's (validateRankReadiness allows only an httpGet on the server's
// port), or vLLM's GET /health without one.
func RankHealthGet(server *corev1.Container) corev1.HTTPGetAction {
	if p := server.ReadinessProbe; p != nil && p.HTTPGet != nil {
		return *p.HTTPGet.DeepCopy()
	}
	return corev1.HTTPGetAction{Path: VLLMHealthPath}
}

// validateParallelismShape checks parallelism against the role's shape (no template needed).
func validateParallelismShape(spec *InferenceServiceSpec, role *Role, rolePath *field.Path) field.ErrorList {
	p := role.Parallelism
	if p == nil {
		return nil
	}
	path := rolePath.Child("parallelism")
	var errs field.ErrorList
	if role.ModelFlexibility != nil {
		errs = append(errs, field.Forbidden(path, "a dual-pods role's servers run in pods FMA makes, one server a pod: remove parallelism or modelFlexibility"))
	}
	if p.Data < 1 {
		errs = append(errs, field.Required(path.Child("data"), "the data parallel ranks of one replica, at least 1"))
	}
	for _, size := range []struct {
		name  string
		value int
	}{{"dataLocal", p.DataLocal}, {"tensor", p.Tensor}, {"pipeline", p.Pipeline}} {
		if size.value < 0 {
			errs = append(errs, field.Invalid(path.Child(size.name), size.value, "must be at least 1 (or unset)"))
		}
	}
	if p.DataRPCPort != 0 {
		for _, msg := range validation.IsValidPortNum(p.DataRPCPort) {
			errs = append(errs, field.Invalid(path.Child("dataRPCPort"), p.DataRPCPort, msg))
		}
	}
	nodes := int(role.NodeCount())
	if len(errs) > 0 || nodes < 1 || nodes > MaxNodeCount {
		return errs // a bad nodeCount is reported at its own path
	}
	switch {
	case p.DataLocal > 0 && p.Data != p.DataLocal*nodes:
		errs = append(errs, field.Invalid(path.Child("data"), p.Data, fmt.Sprintf(
			"must equal dataLocal (%d) x multinode.nodeCount (%d) = %d: each pod of a replica runs dataLocal ranks",
			p.DataLocal, nodes, p.DataLocal*nodes)))
	case p.DataLocal == 0 && p.Data%nodes != 0:
		errs = append(errs, field.Invalid(path.Child("data"), p.Data, fmt.Sprintf(
			"must be a multiple of multinode.nodeCount (%d): each pod of a replica runs data / nodeCount ranks", nodes)))
	}
	if role.RestartPolicy == lwsv1.NoneRestartPolicy && role.MultiNode() {
		// The pod's launch exits when one of its ranks ends (render's rankWatch) and the kubelet
		// restarts it, but its new ranks cannot join the running group: vLLM's data parallel
		// group is formed once, at the leader's RPC port, so only a restart of every pod helps.
		errs = append(errs, field.Invalid(rolePath.Child("restartPolicy"), string(role.RestartPolicy),
			"a multi-node data parallel replica's ranks form one group: a rank whose pod restarts alone cannot join it again, "+
				"and the other pods' ranks wait for it forever: remove restartPolicy (RecreateGroupOnPodRestart restarts the whole replica)"))
	}
	if p.Expert && p.Data*p.TensorSize() < 2 {
		errs = append(errs, field.Invalid(path.Child("expert"), true,
			"expert parallel spreads the experts over data x tensor GPUs, here 1: raise data or tensor, or remove expert"))
	}
	if ranks := role.LocalRanks(); spec.Router() != nil && ranks > MaxRoutedLocalRanks {
		errs = append(errs, field.Invalid(path.Child("dataLocal"), ranks, fmt.Sprintf(
			"behind a router each rank of a pod is a port of the InferencePool, which lists at most %d: run at most %d ranks a pod (more pods a replica)",
			MaxRoutedLocalRanks, MaxRoutedLocalRanks)))
	}
	return errs
}

// validateParallelismServer checks the model server of a role with parallelism: a command line
// the launch can extend, none of the flags it renders, the GPUs its ranks take, and ports that do
// not collide (the ranks' HTTP ports, the RPC port).
func validateParallelismServer(role *Role, podSpec *corev1.PodSpec, specPath *field.Path, servingPort int32, rolePath *field.Path) field.ErrorList {
	p := role.Parallelism
	serverIndex := ServingContainerIndex(podSpec)
	server := &podSpec.Containers[serverIndex]
	serverPath := specPath.Child("containers").Index(serverIndex)
	path := rolePath.Child("parallelism")
	var errs field.ErrorList
	if vllm.IsShellScript(server) {
		errs = append(errs, field.Invalid(serverPath.Child("command"), server.Command,
			"parallelism launches one `vllm serve` a rank from the server's command line; give the server's own command and args "+
				"(or none, for the vllm/vllm-openai image), not a shell script"))
	}
	words := vllm.CommandLine(server)
	for _, flag := range vllm.LaunchFlagsOf(vllm.ByParallelism, vllm.Owned) { // --port is rank 0's, the others' base
		if flag.In(words) {
			errs = append(errs, field.Invalid(serverPath.Child("args"), flag.Name, fmt.Sprintf(
				"parallelism gives every rank %s: remove it from the server's command line and set the role's parallelism instead", flag.Name)))
		}
	}
	for i, v := range podSpec.Volumes {
		if v.Name == SharedMemoryVolumeName {
			errs = append(errs, field.Invalid(specPath.Child("volumes").Index(i).Child("name"), v.Name,
				"a data parallel server's shared memory has this name: rename yours (mounted at /dev/shm, it replaces the default)"))
		}
	}
	ranks := role.LocalRanks()
	if want := int64(ranks) * int64(p.RankGPUs()); ContainerGPUs(server) != want {
		errs = append(errs, field.Invalid(path, fmt.Sprintf("dataLocal %d x tensor %d x pipeline %d", ranks, p.TensorSize(), p.PipelineSize()), fmt.Sprintf(
			"each pod runs %d ranks of %d GPUs = %d GPUs, but the model server's %s limit is %d: make them agree",
			ranks, p.RankGPUs(), want, GPUResourceName, ContainerGPUs(server))))
	}
	if servingPort > 0 {
		last := servingPort + ranks - 1
		if last > 65535 {
			errs = append(errs, field.Invalid(path.Child("dataLocal"), ranks, fmt.Sprintf(
				"local rank i serves on the server's port (%d) + i, past 65535: serve on a lower port", servingPort)))
		}
		if rpc := p.RPCPort(); rpc >= servingPort && rpc <= last {
			errs = append(errs, field.Invalid(path.Child("dataRPCPort"), rpc, fmt.Sprintf(
				"is one of the ranks' HTTP ports, %s: choose another", portRange(servingPort, ranks))))
		}
		errs = append(errs, validatePortsOffRanks(podSpec, specPath, serverIndex, servingPort, ranks, p.RPCPort())...)
		errs = append(errs, validateRankReadiness(server, serverPath, servingPort, ranks)...)
	}
	return errs
}

// validateRankReadiness: a data parallel pod is ready when every rank answers, so the launch
// sends the server's readiness probe's HTTP GET to every rank's port (render's
// RankReadinessProbe). A probe it cannot send to each rank is refused rather than kept on rank 0
// or dropped: a platform engineer who wrote a probe expects it to decide readiness, and one
// rank's answer must not stand for the others' (docs/design/0026-wide-expert-parallelism.md). The
// probe reads the pod's address from POD_IP, so the server does not give that variable another
// value.
func validateRankReadiness(server *corev1.Container, serverPath *field.Path, servingPort, ranks int32) field.ErrorList {
	var errs field.ErrorList
	path := serverPath.Child("readinessProbe")
	ports := portRange(servingPort, ranks)
	if probe := server.ReadinessProbe; probe != nil {
		kind := ""
		switch {
		case probe.Exec != nil:
			kind = "exec"
		case probe.TCPSocket != nil:
			kind = "tcpSocket"
		case probe.GRPC != nil:
			kind = "grpc"
		}
		switch {
		case kind != "": // a probe of no kind is refused as any container's (validateProbesAndLifecycle)
			errs = append(errs, field.Invalid(path.Child(kind), "(the probe)", fmt.Sprintf(
				"a data parallel pod is ready when every rank answers: the launch sends the readiness probe's HTTP GET to each rank's port (%s); "+
					"give an httpGet on the server's port %d (vLLM serves /health), or no readiness probe for GET /health", ports, servingPort)))
		case probe.HTTPGet != nil:
			if port, ok := ProbePort(server, probe.HTTPGet.Port); !ok || port != servingPort {
				errs = append(errs, field.Invalid(path.Child("httpGet", "port"), probe.HTTPGet.Port.String(), fmt.Sprintf(
					"must be the server's port, %d (local rank 0's): the launch sends the probe's GET to every rank's port, %s", servingPort, ports)))
			}
		}
	}
	for i, v := range server.Env {
		if v.Name == PodIPVariable && (v.ValueFrom == nil || v.ValueFrom.FieldRef == nil || v.ValueFrom.FieldRef.FieldPath != "status.podIP") {
			errs = append(errs, field.Invalid(serverPath.Child("env").Index(i), v.Name, fmt.Sprintf(
				"the ranks' readiness probe reads the pod's address from %s: remove it, or give it the pod's address (valueFrom.fieldRef.fieldPath status.podIP)", PodIPVariable)))
		}
	}
	return errs
}

// validatePortsOffRanks: no port the pod's containers declare is a rank's (but the server's own
// port, rank 0's) or the RPC port: the pod's containers share its network, and the launch
// declares the ranks' ports itself.
func validatePortsOffRanks(podSpec *corev1.PodSpec, specPath *field.Path, serverIndex int, servingPort, ranks, rpc int32) field.ErrorList {
	var errs field.ErrorList
	for kind, containers := range [][]corev1.Container{podSpec.InitContainers, podSpec.Containers} {
		for i := range containers {
			for j, port := range containers[i].Ports {
				portPath := specPath.Child([]string{"initContainers", "containers"}[kind]).Index(i).Child("ports").Index(j).Child("containerPort")
				n := port.ContainerPort
				switch {
				case n == rpc:
					errs = append(errs, field.Invalid(portPath, n, "is the ranks' RPC port (parallelism.dataRPCPort): choose another"))
				case n > servingPort && n < servingPort+ranks:
					errs = append(errs, field.Invalid(portPath, n, fmt.Sprintf("is local rank %d's HTTP port (the server's port + %d): choose a port off %s",
						n-servingPort, n-servingPort, portRange(servingPort, ranks))))
				case n == servingPort && (kind == 0 || i != serverIndex):
					errs = append(errs, field.Invalid(portPath, n, fmt.Sprintf("is local rank 0's HTTP port, the server's: choose a port off %s",
						portRange(servingPort, ranks))))
				}
			}
		}
	}
	return errs
}

// portRange is a run of ports as a user reads it: "8000" or "8000-8007".
func portRange(first, count int32) string {
	if count <= 1 {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, first+count-1)
}

// rangesOverlap: two runs of ports share one.
func rangesOverlap(a, aCount, b, bCount int32) bool {
	return a < b+bCount && b < a+aCount
}
