// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"maps"
	"slices"
	"strconv"
)

// The Envoy sidecar of a standalone router (core/render standalone.go): no Envoy build is on a
// registry here, so the test gateway stands for it, configured from the bootstrap the container
// mounts (tests/gateway/cmd/envoy-standin).

// envoyLaunch is the Envoy container's one process: its command line (containerCommand's, its -c
// path mapped to the ConfigMap volume's directory) with where each container port listens on this
// machine and the pod's address, which stands for its loopback (the picker's gRPC port in the
// same pod is served on the pod's address, containers.go's forwarders).
func envoyLaunch(run *containerRun) ([]launch, error) {
	args, env, err := containerCommand(run)
	if err != nil {
		return nil, err
	}
	ports := slices.Sorted(maps.Keys(run.ports))
	for _, p := range ports {
		args = append(args, "--listen-port", strconv.Itoa(int(p))+"="+strconv.Itoa(run.ports[p]))
	}
	// The admin's drain calls, which the proxy's preStop hook makes to the pod's loopback
	// (termination.go runs it with the pod's address standing for the loopback).
	args = append(args, "--loopback", run.pod.Status.PodIP, "--serve-admin")
	// The cluster's DNS and kube-proxy, which the stand-in is too for a Service its ext_proc
	// cluster fails over to: it resolves the name in the pod's namespace to the Service's Ready
	// endpoints with the cluster's own credentials (kube-proxy's, not the pod's).
	args = append(args, "--cluster-kubeconfig", run.k.c.Kubeconfig, "--namespace", run.pod.Namespace)
	return []launch{{args: args, env: env, ports: ports, rank: noRank}}, nil
}
