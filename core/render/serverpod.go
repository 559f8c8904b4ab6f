// SPDX-License-Identifier: Apache-2.0

package render

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// What every serving role's server gets that its template leaves out, before the template is
// routed, wrapped by the Ray launcher, turned into data parallel ranks or dual pods: each of
// those keeps it right for what it does to the server (the routing sidecar moves the port and its
// probes with it, the rank launch sends the probes' GET to every rank, a Ray worker, which serves
// nothing, drops it, FMA's server patch carries it). One rule for every path.

// The default probes' timings: readiness is asked often, so a pod joins the pool soon after its
// server answers; the startup probe's period is what its failure threshold counts in. Each waits
// 5 s for an answer, not the API's 1 s: a server busy with a batch answers /health late, and a
// data-parallel pod's probe starts Python and asks every rank (dataparallel.go RankReadinessProbe).
const (
	serverReadinessPeriodSeconds = 5
	serverStartupPeriodSeconds   = 10
	serverProbeTimeoutSeconds    = 5
)

// serveOnDeclaredPort declares the server's port on its container when the template declares
// none: Prometheus' pod discovery has a target only for a declared port, and the router's pool,
// the PodMonitors and the probes aim at it. It is named http (api.ServingPortName, the name the
// port is found by) unless another container of the pod has that name.
func serveOnDeclaredPort(pod *corev1.PodSpec, port int32) {
	server := &pod.Containers[api.ServingContainerIndex(pod)]
	if len(server.Ports) > 0 { // validation made sure one of them is the serving port
		return
	}
	name := api.ServingPortName
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name }) {
			name = ""
		}
	}
	server.Ports = []corev1.ContainerPort{{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
}

// defaultServerProbes gives the server the probes its template does not: a readiness probe, so
// the pod is Ready (and in the pool) only once the server answers vLLM's GET /health, not as soon
// as its container starts, minutes before the model is loaded; and a startup probe of the same
// GET that allows the model load as long as `pulumi up` waits for the replica (the role's
// awaitTimeout): until it passes the kubelet runs neither the readiness nor a liveness probe, and
// a server that never answers is restarted. A probe the template gives is kept as given. A server
// started with --ssl-certfile is asked over HTTPS.
func defaultServerProbes(server *corev1.Container, port int32, load time.Duration) {
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: api.VLLMHealthPath, Port: intstr.FromInt32(port)}}
	if vllm.ServesTLS(server) {
		// --ssl-certfile: the server answers only HTTPS; the kubelet does not verify the
		// certificate (k8s.io/kubernetes pkg/probe/http/request.go: InsecureSkipVerify).
		health.HTTPGet.Scheme = corev1.URISchemeHTTPS
	}
	if server.ReadinessProbe == nil {
		server.ReadinessProbe = &corev1.Probe{ProbeHandler: *health.DeepCopy(), PeriodSeconds: serverReadinessPeriodSeconds,
			TimeoutSeconds: serverProbeTimeoutSeconds}
	}
	if server.StartupProbe == nil {
		period := time.Duration(serverStartupPeriodSeconds) * time.Second
		server.StartupProbe = &corev1.Probe{ProbeHandler: health, PeriodSeconds: serverStartupPeriodSeconds,
			TimeoutSeconds:   serverProbeTimeoutSeconds,
			FailureThreshold: int32((load + period - 1) / period)}
	}
}
