// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/fma"
)

// A Pod is one pod the cluster makes of the tree: an LWS group's leader or a worker, a dual-pods
// requester and the server FMA makes beside it, the Endpoint Picker's, a download Job's.
type Pod struct {
	// Name is the pod's name as its controller names it; Desc says where it comes from.
	Name, Desc string
	// Role is the role whose pod it is ("" for a download Job's).
	Role   string
	Labels map[string]string
	Spec   corev1.PodSpec
	// LWS and Group: the LeaderWorkerSet and its group of the pod; GroupSize its pods.
	LWS       string
	Group     int
	GroupSize int
	// Requester is a dual-pods server's requester, whose GPUs it runs on.
	Requester *Pod
	// Processes are what its containers run.
	Processes []*Process
}

// Pods are every pod of a tree, with their processes. An LWS's pods carry the labels LWS adds
// (its name, the group and worker index); an elastic LWS's, every group up to its limit.
func Pods(tree *render.Tree) ([]*Pod, error) {
	var out []*Pod
	for _, o := range tree.Objects {
		switch obj := o.Object.(type) {
		case *lwsv1.LeaderWorkerSet:
			groups := int(*obj.Spec.Replicas)
			if o.Elastic {
				groups = int(tree.Service.Spec.RoleNamed(o.Role).ElasticReplicaLimit())
			}
			size := int(*obj.Spec.LeaderWorkerTemplate.Size)
			for g := range groups {
				for w := range size {
					tpl, which := &obj.Spec.LeaderWorkerTemplate.WorkerTemplate, "worker template"
					if w == 0 && obj.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
						tpl, which = obj.Spec.LeaderWorkerTemplate.LeaderTemplate, "leader template"
					}
					name := fmt.Sprintf("%s-%d", obj.Name, g)
					if w > 0 {
						name += "-" + strconv.Itoa(w)
					}
					labels := map[string]string{lwsv1.SetNameLabelKey: obj.Name, lwsv1.GroupIndexLabelKey: strconv.Itoa(g),
						lwsv1.WorkerIndexLabelKey: strconv.Itoa(w)}
					for k, v := range tpl.Labels {
						labels[k] = v
					}
					pod := &Pod{Name: name, Desc: fmt.Sprintf("pod %s (LeaderWorkerSet %s, %s)", name, obj.Name, which), Role: o.Role,
						Labels: labels, Spec: *tpl.Spec.DeepCopy(), LWS: obj.Name, Group: g, GroupSize: size}
					out = append(out, pod)
					if _, dual := tpl.Annotations[render.AnnotationDualPodsServerPatch]; dual {
						server, err := dualPodsServer(pod, tpl)
						if err != nil {
							return nil, err
						}
						out = append(out, server)
					}
				}
			}
		case *appsv1.Deployment:
			// named as the ReplicaSet controller names a Deployment's pods: "{deployment}-{pod
			// template hash}-{random}"
			out = append(out, &Pod{Name: obj.Name + "-7c9d5b8f6d-x7k2q", Desc: "pod of Deployment " + obj.Name, Role: o.Role,
				Labels: obj.Spec.Template.Labels, Spec: *obj.Spec.Template.Spec.DeepCopy()})
		case *batchv1.Job:
			out = append(out, &Pod{Name: obj.Name + "-0", Desc: "pod of Job " + obj.Name, Role: o.Role,
				Labels: obj.Spec.Template.Labels, Spec: *obj.Spec.Template.Spec.DeepCopy()})
		}
	}
	files := map[string]map[string]string{}
	for _, o := range tree.Objects {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok {
			files[cm.Name] = cm.Data
		}
	}
	for _, p := range out {
		if err := p.readProcesses(files); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Desc, err)
		}
	}
	return out, nil
}

// dualPodsServer is the server-running pod FMA's controller makes for a requester bound to it,
// on the requester's GPUs (mirror/fma).
func dualPodsServer(requester *Pod, tpl *corev1.PodTemplateSpec) (*Pod, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: requester.Name, Labels: requester.Labels, Annotations: tpl.Annotations},
		Spec: *requester.Spec.DeepCopy()}
	pod.Spec.NodeName = "node-1"
	devices := make([]string, requester.GPUs())
	for i := range devices {
		devices[i] = strconv.Itoa(i)
	}
	server, err := fma.ServerProvidingPod(pod, strings.Join(devices, ","))
	if err != nil {
		return nil, fmt.Errorf("the server of %s: %w", requester.Desc, err)
	}
	name := requester.Name + "-dual"
	return &Pod{Name: name, Desc: fmt.Sprintf("dual-pods server %s (made by FMA for %s)", name, requester.Desc), Role: requester.Role,
		Labels: server.Labels, Spec: server.Spec, Requester: requester}, nil
}

// GPUs is what the pod asks of nvidia.com/gpu (its containers' limits, else requests, as the
// scheduler counts an extended resource); a dual-pods server runs on its requester's.
func (p *Pod) GPUs() int64 {
	if p.Requester != nil {
		return p.Requester.GPUs()
	}
	var n int64
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Limits[api.GPUResourceName]
		if !ok {
			q, ok = c.Resources.Requests[api.GPUResourceName]
		}
		if ok {
			n += q.Value()
		}
	}
	return n
}

// DeclaresPort is whether a container of the pod declares the port; by number, or by name
// (then the number it names).
func (p *Pod) DeclaresPort(number int32) bool {
	for _, c := range p.containers() {
		for _, cp := range c.Ports {
			if cp.ContainerPort == number {
				return true
			}
		}
	}
	return false
}

// NamedPort is the number of a container port the pod declares under the name.
func (p *Pod) NamedPort(name string) (int32, bool) {
	for _, c := range p.containers() {
		for _, cp := range c.Ports {
			if cp.Name == name {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// containers are the pod's long-running containers: its containers and its native sidecars
// (init containers that keep running).
func (p *Pod) containers() []*corev1.Container {
	var out []*corev1.Container
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	for i := range p.Spec.Containers {
		out = append(out, &p.Spec.Containers[i])
	}
	return out
}

// Listener is the process of the pod that listens on the port, nil for none.
func (p *Pod) Listener(port int32) *Process {
	for _, proc := range p.Processes {
		for _, l := range proc.Listens {
			if l == port {
				return proc
			}
		}
	}
	return nil
}
