// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A container's command line and environment as the pod gives them, with its paths and ports
// mapped to this machine's.

// environment is the container's variables (values and the downward API's pod fields) and
// KUBECONFIG acting as the pod's ServiceAccount, as its in-cluster configuration would. With
// strict, a variable it cannot resolve is an error; else it is left out.
func (run *containerRun) environment(strict bool) ([]string, error) {
	pod := run.pod
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	kubeconfig, err := run.k.c.serviceAccountKubeconfig(pod.Namespace, account)
	if err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + kubeconfig}
	fields := map[string]string{
		"metadata.name": pod.Name, "metadata.namespace": pod.Namespace, "metadata.uid": string(pod.UID),
		"spec.nodeName": pod.Spec.NodeName, "spec.serviceAccountName": account, "status.podIP": pod.Status.PodIP,
	}
	for _, v := range run.container.Env {
		switch {
		case v.ValueFrom == nil:
			env = append(env, v.Name+"="+v.Value)
		case v.ValueFrom.FieldRef != nil && fields[v.ValueFrom.FieldRef.FieldPath] != "":
			env = append(env, v.Name+"="+fields[v.ValueFrom.FieldRef.FieldPath])
		case strict:
			return nil, fmt.Errorf("variable %s: the suite resolves values and the pod's name, namespace, uid, node, account and address only", v.Name)
		}
	}
	return env, nil
}

// containerLaunch is the container as one process: containerCommand, serving every port.
func containerLaunch(run *containerRun) ([]launch, error) {
	args, env, err := containerCommand(run)
	if err != nil {
		return nil, err
	}
	return []launch{{args: args, env: env, ports: slices.Sorted(maps.Keys(run.ports)), rank: noRank}}, nil
}

// containerCommand is the container's own command line (its command after the image's program,
// which is ours, then its args) with what a container's namespaces give it mapped to this
// machine: a path under a volume's mount path to the volume's directory, a container port given
// to a port flag (--*-port, --port) to the program's loopback port.
func containerCommand(run *containerRun) ([]string, []string, error) {
	if err := run.mountVolumes(); err != nil {
		return nil, nil, err
	}
	env, err := run.environment(true)
	if err != nil {
		return nil, nil, err
	}
	words := append(append([]string{}, run.container.Command...), run.container.Args...)
	if len(run.container.Command) > 0 {
		words = words[1:]
	}
	mounts := make([]string, 0, len(run.mounts))
	for mount := range run.mounts {
		mounts = append(mounts, mount)
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) }) // the deepest mount first
	mapPath := func(v string) string {
		for _, mount := range mounts {
			if v == mount || strings.HasPrefix(v, strings.TrimSuffix(mount, "/")+"/") {
				return run.mounts[mount] + strings.TrimPrefix(v, mount)
			}
		}
		return v
	}
	mapPort := func(flag, v string) string {
		if flag != "--port" && !strings.HasSuffix(flag, "-port") {
			return v
		}
		if n, err := strconv.Atoi(v); err == nil {
			if port, ok := run.ports[int32(n)]; ok {
				return strconv.Itoa(port)
			}
		}
		return v
	}
	out := make([]string, len(words))
	for i, w := range words {
		if name, value, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") {
			out[i] = name + "=" + mapPort(name, mapPath(value))
			continue
		}
		previous := ""
		if i > 0 {
			previous = words[i-1]
		}
		out[i] = mapPort(previous, mapPath(w))
	}
	return out, env, nil
}
