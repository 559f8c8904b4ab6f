// SPDX-License-Identifier: Apache-2.0

package render

import (
	"strconv"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// Ray launch of a multi-node vLLM replica (docs/design/0000-the-fusioninfer-design.md): the leader starts the Ray head
// and then the server with the Ray executor; the workers join the head and block.
// The Ray head's port is api.RayHeadPort: validation keeps the server off it.
var (
	// RayWorkerScript joins the replica's Ray head; LWS injects the leader's address.
	RayWorkerScript = "ray start --address=$" + lwsv1.LwsLeaderAddress + ":" + strconv.Itoa(int(api.RayHeadPort)) + " --block"
	rayHeadCommand  = "ray start --head --port=" + strconv.Itoa(int(api.RayHeadPort))
)

// defaultServeCommand runs the server when the container has no command: the entrypoint of the
// vllm/vllm-openai image.
var defaultServeCommand = []string{"vllm", "serve"}

var shellCommand = []string{"/bin/sh", "-c"}

// RayLeaderScript is the leader's shell script: Ray head, then exec of the server's own command
// line with the Ray executor backend. Every word is shell-quoted, so JSON, spaces and quotes in
// arguments reach the server unchanged.
func RayLeaderScript(server *corev1.Container) string {
	serve := server.Command
	if len(serve) == 0 {
		serve = defaultServeCommand
	}
	words := append(append([]string{}, serve...), server.Args...)
	if !vllm.FlagDistributedExecutorBackend.In(words) {
		words = append(words, vllm.FlagDistributedExecutorBackend.Name, "ray")
	}
	return rayHeadCommand + " && exec " + shellescape.QuoteCommand(words)
}

// rayLeaderTemplate turns the role's template into the leader's: the Ray head plus the server.
func rayLeaderTemplate(tpl *corev1.PodTemplateSpec) {
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	script := RayLeaderScript(server)
	server.Command = append([]string{}, shellCommand...)
	server.Args = []string{script}
	for _, p := range server.Ports {
		if p.ContainerPort == api.RayHeadPort { // the user's own ray port: validation allows only Ray's
			return
		}
	}
	server.Ports = append(server.Ports, corev1.ContainerPort{Name: api.RayPortName, ContainerPort: api.RayHeadPort, Protocol: corev1.ProtocolTCP})
}

// rayWorkerTemplate turns the role's template into a worker's: it joins the head and serves
// nothing, so it has no serving ports and no probes of the server (which would never pass).
func rayWorkerTemplate(tpl *corev1.PodTemplateSpec) {
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	server.Command = append([]string{}, shellCommand...)
	server.Args = []string{RayWorkerScript}
	server.Ports = nil
	server.ReadinessProbe = nil
	server.LivenessProbe = nil
	server.StartupProbe = nil
}
