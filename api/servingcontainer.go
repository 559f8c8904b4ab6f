// SPDX-License-Identifier: Apache-2.0

package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// GPUResourceName is the extended resource of NVIDIA GPUs.
const GPUResourceName corev1.ResourceName = "nvidia.com/gpu"

// ServingContainerIndex is the index of the model server among a pod's containers, found by what
// it runs, not by where it stands: the first container that is vLLM's server (vllm.RunsServer:
// `vllm serve`, a vllm.entrypoints module, or the vLLM image's own entrypoint), else the first
// container (a server of another make, its sidecars after it). 0 when there is no container.
func ServingContainerIndex(spec *corev1.PodSpec) int {
	for i := range spec.Containers {
		if vllm.RunsServer(&spec.Containers[i]) {
			return i
		}
	}
	return 0
}

// The serving port: the container port named http, else the server's --port flag, else vLLM's
// default. The router's InferencePool targets it.
const (
	ServingPortName    = "http"
	DefaultServingPort = 8000
)

// ServingPort is the port the model server listens on. It is an error when the container names
// an http port its --port flag contradicts, or declares ports of which none is the serving port.
func ServingPort(c *corev1.Container) (int32, error) {
	flagPort, hasFlag, err := portFlag(c)
	if errors.Is(err, errPortExpanded) {
		// The script computes its port when it runs: the port named http says where it listens.
		for _, p := range c.Ports {
			if p.Name == ServingPortName {
				return p.ContainerPort, nil
			}
		}
		return 0, fmt.Errorf("the server's shell script gives --port a value the shell expands: declare the port it listens on as a container port named %s", ServingPortName)
	}
	if err != nil {
		return 0, err
	}
	for i, p := range c.Ports {
		if p.Name == ServingPortName {
			if hasFlag && p.ContainerPort != flagPort {
				return 0, fmt.Errorf("the port named %s is %d but the server's --port is %d", ServingPortName, p.ContainerPort, flagPort)
			}
			if !hasFlag && p.ContainerPort != DefaultServingPort && vllm.RunsServer(c) {
				return 0, &NamedPortError{Index: i, Port: p.ContainerPort, InScript: vllm.IsShellScript(c)}
			}
			return p.ContainerPort, nil
		}
	}
	port := int32(DefaultServingPort)
	if hasFlag {
		port = flagPort
	}
	if len(c.Ports) == 0 {
		return port, nil
	}
	for _, p := range c.Ports {
		if p.ContainerPort == port {
			return port, nil
		}
	}
	return 0, fmt.Errorf("none of the declared ports is the server's (%d): name the serving port %q", port, ServingPortName)
}

// NamedPortError is a vLLM server's port named http where vLLM does not listen: without --port
// it listens on 8000, and naming a port does not move it there. Refused rather than --port
// added: the pool, probes and PodMonitor would aim at the named port, and a flag the user did not
// write is a surprise; validation reports it at the port.
type NamedPortError struct {
	// Index is the port's among the container's ports.
	Index int
	Port  int32
	// InScript: the server is started by the container's shell script, where --port belongs.
	InScript bool
}

func (e *NamedPortError) Error() string {
	where := "the server's args"
	if e.InScript {
		where = "the vllm serve command of the server's shell script"
	}
	return fmt.Sprintf("vLLM listens on %d without --port, not on the port named %s (%d): add --port %d to %s, or name another port %s",
		DefaultServingPort, ServingPortName, e.Port, e.Port, where, ServingPortName)
}

// errPortExpanded: the server's shell script gives --port a value only the shell knows.
var errPortExpanded = errors.New("--port is expanded by the shell")

// portFlag is the server's --port flag, if given: in its command line, or in the server command
// of its shell script (vllm.ServerCommandLine).
func portFlag(c *corev1.Container) (int32, bool, error) {
	v, found := vllm.FlagPort.Value(vllm.ServerCommandLine(c))
	if !found {
		return 0, false, nil
	}
	if vllm.Expanded(v) {
		return 0, true, errPortExpanded
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		_, inArgs := vllm.FlagPort.Value(c.Args)
		return 0, true, &PortFlagError{Value: v, InArgs: inArgs}
	}
	return int32(n), true, nil
}

// PortFlagError is a server's --port whose value is no port; validation reports it at the
// container's args (or command, where the flag is), not at its ports.
type PortFlagError struct {
	Value string
	// InArgs: the flag is in the container's args, not its command.
	InArgs bool
}

func (e *PortFlagError) Error() string {
	return fmt.Sprintf("--port %q: %s", e.Value, portRule)
}

// portRule is what a port is, in the words of a message.
const portRule = "must be a port, a whole number from 1 to 65535"

// declaredPorts are a container's ports as a message shows them: "8000 (http), 9000".
func declaredPorts(c *corev1.Container) string {
	texts := make([]string, len(c.Ports))
	for i, p := range c.Ports {
		texts[i] = strconv.Itoa(int(p.ContainerPort))
		if p.Name != "" {
			texts[i] += " (" + p.Name + ")"
		}
	}
	return strings.Join(texts, ", ")
}

// ContainerGPUs are the GPUs one container holds (its limit, else its request), 0 if none: the
// devices its process sees. What a pod takes on its node is PodGPUs.
func ContainerGPUs(c *corev1.Container) int64 {
	if q, ok := c.Resources.Limits[GPUResourceName]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[GPUResourceName]; ok {
		return q.Value()
	}
	return 0
}

// ProbePort is the number of a probe's port of the container: the number itself, or the port the
// container declares by that name (the kubelet's prober resolves a named port so:
// k8s.io/kubernetes pkg/probe/util.go ResolveContainerPort, findPortByName). False for a
// name the container does not declare.
func ProbePort(c *corev1.Container, port intstr.IntOrString) (int32, bool) {
	if port.Type == intstr.Int {
		return port.IntVal, true
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort, true
		}
	}
	return 0, false
}
