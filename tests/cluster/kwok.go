// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// ImagePullFailsAnnotation on a pod makes kwok report its containers waiting in ImagePullBackOff,
// never Ready (the stage imagePullFailsStage), as a kubelet does for an image it cannot pull.
const ImagePullFailsAnnotation = "e2e.fusioninfer.io/image-pull-fails"

// imagePullFailsStage is a kwok Stage of ours: a pod with ImagePullFailsAnnotation stays Pending
// with every container waiting in ImagePullBackOff.
const imagePullFailsStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-fails
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["` + ImagePullFailsAnnotation + `"]'
      operator: 'Exists'
    - key: '.status.containerStatuses'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ImagePullBackOff
            message: {{ printf "Back-off pulling image %q: not found" .image | Quote }}
      {{ end }}
      phase: Pending
`

// NotReadyAnnotation on a pod makes kwok run it (Running, with its address, its containers
// started) but never make it Ready (the stage runningNotReadyStage): a server whose readiness
// probe does not pass, one still loading its model or failing.
const NotReadyAnnotation = "e2e.fusioninfer.io/not-ready"

// runningNotReadyStage is a kwok Stage of ours: a scheduled pod with NotReadyAnnotation becomes
// Running with an address (as kwok's pod-ready stage gives it) and every container started but
// not ready.
const runningNotReadyStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running-not-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["` + NotReadyAnnotation + `"]'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// readyDelay is how long a scheduled pod stays Pending (kwok Stage spec.delay): its
// ReadyAfterAnnotation, else podReadyDelay. It stands for the time a model takes to load.
func readyDelay(podReadyDelay time.Duration) map[string]any {
	return map[string]any{
		"durationMilliseconds": podReadyDelay.Milliseconds(),
		"durationFrom":         map[string]any{"jq": map[string]any{"expression": `.metadata.annotations["` + ReadyAfterAnnotation + `"]`}},
	}
}

// runningUntilServingStage is runningNotReadyStage for the pods programPods selects (without
// NotReadyAnnotation), after the pod-ready stage's delay: the suite makes them Ready once their
// programs serve (probes.go markReady).
func runningUntilServingStage(podReadyDelay time.Duration, programPods string) (string, error) {
	var stage map[string]any
	if err := yaml.Unmarshal([]byte(runningNotReadyStage), &stage); err != nil {
		return "", err
	}
	obj := &unstructured.Unstructured{Object: stage}
	obj.SetName("pod-running-until-serving")
	expressions := []any{
		map[string]any{"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
		map[string]any{"key": ".status.phase", "operator": "In", "values": []any{"Pending"}},
		map[string]any{"key": `.metadata.annotations["` + ImagePullFailsAnnotation + `"]`, "operator": "DoesNotExist"},
		map[string]any{"key": `.metadata.annotations["` + NotReadyAnnotation + `"]`, "operator": "DoesNotExist"},
		map[string]any{"key": programPods, "operator": "In", "values": []any{"true"}},
	}
	if err := unstructured.SetNestedSlice(obj.Object, expressions, "spec", "selector", "matchExpressions"); err != nil {
		return "", err
	}
	if err := unstructured.SetNestedField(obj.Object, readyDelay(podReadyDelay), "spec", "delay"); err != nil {
		return "", err
	}
	data, err := yaml.Marshal(obj.Object)
	return string(data), err
}

// ReadyAfterAnnotation on a pod sets how long after it is scheduled kwok makes it Ready (a Go
// duration), instead of Options.PodReadyDelay: a test gives its model servers a load time.
const ReadyAfterAnnotation = "e2e.fusioninfer.io/ready-after"

// kwokStages are kwokctl's default stages, from the kwok module: nodes become Ready, scheduled
// pods Running and Ready (unless ImagePullFailsAnnotation or NotReadyAnnotation says otherwise),
// Job pods complete, deleted pods go (once no finalizer holds them).
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// startKwok runs kwok for the nodes AddNodes makes, with kwokctl's default stages; the
// pod-ready stage waits first (kwok Stage spec.delay): the pod's ReadyAfterAnnotation, else
// podReadyDelay. It stands for the time a model takes to load. podCIDR, if not empty, is where
// kwok takes the pods' addresses from (its --cidr). programPods, if not empty, is a jq query
// (kwok's selector keys) true for a pod the suite runs programs for (containers.go): kwok makes
// such a pod Running, with its address, and not Ready; the suite makes it Ready once its programs
// pass their readiness probes, as the kubelet does.
func (c *Cluster) startKwok(podReadyDelay time.Duration, podCIDR, programPods string) error {
	binary, err := kwok.build()
	if err != nil {
		return err
	}
	var documents []string
	for _, path := range kwokStages {
		file, err := moduleFile("kwok", "sigs.k8s.io/kwok", path)
		if err != nil {
			return err
		}
		stages, err := ReadObjects(file)
		if err != nil {
			return err
		}
		for _, stage := range stages {
			if stage.GetName() == "pod-ready" {
				expressions, _, _ := unstructured.NestedSlice(stage.Object, "spec", "selector", "matchExpressions")
				for _, annotation := range []string{ImagePullFailsAnnotation, NotReadyAnnotation} {
					expressions = append(expressions, map[string]any{
						"key": `.metadata.annotations["` + annotation + `"]`, "operator": "DoesNotExist"})
				}
				if programPods != "" {
					// The suite's own stage, below, takes them.
					expressions = append(expressions, map[string]any{"key": programPods, "operator": "NotIn", "values": []any{"true"}})
				}
				if err := unstructured.SetNestedSlice(stage.Object, expressions, "spec", "selector", "matchExpressions"); err != nil {
					return err
				}
				if err := unstructured.SetNestedField(stage.Object, readyDelay(podReadyDelay), "spec", "delay"); err != nil {
					return err
				}
			}
			data, err := yaml.Marshal(stage.Object)
			if err != nil {
				return err
			}
			documents = append(documents, string(data))
		}
	}
	documents = append(documents, imagePullFailsStage, runningNotReadyStage)
	if programPods != "" {
		stage, err := runningUntilServingStage(podReadyDelay, programPods)
		if err != nil {
			return err
		}
		documents = append(documents, stage)
	}
	config := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(config, []byte(strings.Join(documents, "---\n")), 0o600); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	Progress("starting kwok %s (pods Ready %s after they are scheduled)", KwokVersion, podReadyDelay)
	args := []string{"--kubeconfig", c.Kubeconfig, "--config", config,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", kwokNodeAnnotation + "=fake",
		"--server-address", fmt.Sprintf("127.0.0.1:%d", port), "--node-lease-duration-seconds", "0"}
	if podCIDR != "" {
		args = append(args, "--cidr", podCIDR)
	}
	return c.start("kwok", binary, args...)
}

// Nodes are simulated nodes: {Prefix}-{i}, each with GPUs nvidia.com/gpu, the labels and the
// taints (a Karpenter pool's nodes carry karpenter.sh/nodepool and the pool's labels and taints).
type Nodes struct {
	Prefix string
	Count  int
	GPUs   int
	Labels map[string]string
	Taints []corev1.Taint
}

// AddNodes adds the simulated nodes and waits until kwok has made them Ready.
func (c *Cluster) AddNodes(ctx context.Context, nodes Nodes) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("192"), corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(int64(nodes.GPUs), resource.DecimalSI),
	}
	for i := range nodes.Count {
		name := fmt.Sprintf("%s-%d", nodes.Prefix, i)
		labels := map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}
		for k, v := range nodes.Labels {
			labels[k] = v
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwokNodeAnnotation: "fake"}, Labels: labels},
			Spec:       corev1.NodeSpec{Taints: nodes.Taints},
			Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := c.Clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return WaitFor(60*time.Second, func() error {
		for i := range nodes.Count {
			node, err := c.Clientset.CoreV1().Nodes().Get(ctx, fmt.Sprintf("%s-%d", nodes.Prefix, i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s is not Ready\n%s", node.Name, c.LogTail("kwok"))
			}
		}
		return nil
	})
}

// DeleteNodes deletes every node whose name starts with prefix.
func (c *Cluster) DeleteNodes(ctx context.Context, prefix string) error {
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, node := range nodes.Items {
		if strings.HasPrefix(node.Name, prefix) {
			if err := c.Clientset.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
