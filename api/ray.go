// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// A multi-node replica's leader runs Ray's head beside the model server (render/ray.go,
// docs/design/0000-the-fusioninfer-design.md): `ray start --head --port=6379`; the workers join
// it there. The leader declares the port under this name.
const (
	RayHeadPort int32 = 6379
	RayPortName       = "ray"
)

// rayHeadPorts are the ports `ray start --head` binds at fixed numbers in the leader's pod, whose
// network the server shares: its own, and Ray's defaults for the client server and dashboard it
// starts when they are installed (ray start's --ray-client-server-port, --dashboard-port and
// --dashboard-agent-listen-port, python/ray/scripts/scripts.py start).
var rayHeadPorts = map[int32]string{
	RayHeadPort: fmt.Sprintf("the Ray head's port (ray start --head --port=%d)", RayHeadPort),
	10001:       "Ray's client server port (ray start's --ray-client-server-port default)",
	8265:        "Ray's dashboard port (ray start's --dashboard-port default)",
	52365:       "Ray's dashboard agent port (ray start's --dashboard-agent-listen-port default)",
}

// validateRayPorts: a multi-node server does not serve on a port the Ray head beside it binds (it
// would fail to bind it, and the leader would lose Ray's port); a port it declares under Ray's
// name is Ray's. Ray's ports declared under another name are the user's own declaration of them.
func validateRayPorts(server *corev1.Container, serverPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port, err := ServingPort(server); err == nil && rayHeadPorts[port] != "" {
		path, value := servingPortSource(server, serverPath, port)
		errs = append(errs, field.Invalid(path, value, fmt.Sprintf(
			"the server's port %d is %s: a multi-node replica's leader runs Ray's head beside the server; "+
				"serve on another port (vLLM's default is %d)", port, rayHeadPorts[port], DefaultServingPort)))
	}
	for i, p := range server.Ports {
		if p.Name == RayPortName && p.ContainerPort != RayHeadPort {
			errs = append(errs, field.Invalid(serverPath.Child("ports").Index(i).Child("containerPort"), p.ContainerPort, fmt.Sprintf(
				"the port named %q is the Ray head's, %d, which the leader declares: rename this port or make it %d", p.Name, RayHeadPort, RayHeadPort)))
		}
	}
	return errs
}

// servingPortSource is where the server's port is given: its --port flag, else the port named http.
func servingPortSource(server *corev1.Container, serverPath *field.Path, port int32) (*field.Path, any) {
	if _, inArgs := vllm.FlagPort.Value(server.Args); inArgs {
		return serverPath.Child("args"), fmt.Sprintf("--port %d", port)
	}
	if _, inCommand := vllm.FlagPort.Value(server.Command); inCommand {
		return serverPath.Child("command"), fmt.Sprintf("--port %d", port)
	}
	for i, p := range server.Ports {
		if p.Name == ServingPortName {
			return serverPath.Child("ports").Index(i).Child("containerPort"), port
		}
	}
	return serverPath.Child("ports"), port
}
