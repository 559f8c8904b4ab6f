// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// features is a combination by value names.
func features(t *testing.T, values map[string]string) Features {
	t.Helper()
	f := make(Features, len(Dimensions))
	for d, dim := range Dimensions {
		if v, ok := values[dim.Name]; ok {
			i := -1
			for j, x := range dim.Values {
				if x == v {
					i = j
				}
			}
			require.GreaterOrEqual(t, i, 0, "%s has no value %s", dim.Name, v)
			f[d] = i
		}
	}
	return f
}

func check(t *testing.T, name string, tree *render.Tree) []string {
	t.Helper()
	pods, err := Pods(tree)
	require.NoError(t, err)
	for _, inv := range Invariants {
		if inv.Name == name {
			return inv.Check(tree, pods)
		}
	}
	t.Fatalf("no invariant %s", name)
	return nil
}

func firstLWS(tree *render.Tree) *lwsv1.LeaderWorkerSet {
	return Objects[*lwsv1.LeaderWorkerSet](tree)[0]
}

// Each invariant the render keeps today is seen to fail on a tree broken as the rule forbids, so
// that its passing says something.
func TestInvariantsSeeABrokenTree(t *testing.T) {
	good := map[string]string{"router": "llm-d-router", "monitoring": "podMonitors-dashboard", "launch": "data-parallel"}
	cases := []struct {
		invariant, want string
		break_          func(tree *render.Tree)
	}{
		{"gpus/gpus-asked-are-gpus-used", "the pod asks for 3 GPUs, its servers use 2", func(tree *render.Tree) {
			c := &firstLWS(tree).Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
			c.Resources.Limits[api.GPUResourceName] = resource.MustParse("3")
		}},
		{"targets/probes-target-listened-ports", "targets port 9999, where no process listens", func(tree *render.Tree) {
			c := &firstLWS(tree).Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9999)}}}
		}},
		{"selectors/dashboard-selects-scraped-labels", `selects role="router", which no PodMonitor sets`, func(tree *render.Tree) {
			for _, pm := range podMonitors(tree) {
				for i := range pm.Spec.PodMetricsEndpoints {
					for j := range pm.Spec.PodMetricsEndpoints[i].RelabelConfigs {
						if pm.Spec.PodMetricsEndpoints[i].RelabelConfigs[j].TargetLabel == "role" {
							pm.Spec.PodMetricsEndpoints[i].RelabelConfigs[j].TargetLabel = "component"
						}
					}
				}
			}
		}},
		{"config/epp-config-loads", "configuration does not load", func(tree *render.Tree) {
			for _, o := range tree.Objects {
				if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Name == api.EndpointPickerConfigName(tree.Service.Name) {
					for k, v := range cm.Data {
						cm.Data[k] = strings.Replace(v, "plugins:", "plugins:\n- type: no-such-plugin", 1)
					}
				}
			}
		}},
		{"targets/pool-targets-listened-and-declared", "targets port 8001, which the pod does not declare", func(tree *render.Tree) {
			c := &firstLWS(tree).Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
			c.Ports = c.Ports[:1]
		}},
	}
	for _, tc := range cases {
		t.Run(tc.invariant, func(t *testing.T) {
			f := features(t, good)
			tree, errs := render.Build(Service(f))
			require.Empty(t, errs)
			require.Empty(t, check(t, tc.invariant, tree), "the unbroken tree of %s keeps it", f)
			tc.break_(tree)
			require.Contains(t, strings.Join(check(t, tc.invariant, tree), "\n"), tc.want)
		})
	}
}

// The GPU invariant sees a multi-node Ray server that uses fewer GPUs than its group asks for,
// in either spelling of vLLM's flags (issue 42 items 6 and 9). Validation refuses such a service,
// so the tree is rendered valid (tensor parallel 16 over 2 pods of 8 GPUs) and then broken as a
// render bug would break it: the server's flag rewritten in the rendered Ray launch (issue 55: the
// test returned before any assertion when validation refused its service).
func TestGPUInvariantSeesIdleGPUsOfARayGroup(t *testing.T) {
	for name, flag := range map[string]string{
		"no tensor parallel":           "",
		"tensor_parallel_size spelled": "--tensor_parallel_size 4",
	} {
		t.Run(name, func(t *testing.T) {
			svc := Service(features(t, map[string]string{"launch": "ray-multinode"}))
			server := &svc.Spec.Roles[0].Template.Spec.Containers[0]
			server.Args = []string{"--model", baseModel, "--tensor-parallel-size", "16"}
			server.Resources.Limits[api.GPUResourceName] = resource.MustParse("8")
			tree, errs := render.Build(svc)
			require.Empty(t, errs)
			require.Empty(t, check(t, "gpus/gpus-asked-are-gpus-used", tree), "the valid tree keeps it")
			rewritten := 0
			for _, lws := range Objects[*lwsv1.LeaderWorkerSet](tree) {
				tpl := lws.Spec.LeaderWorkerTemplate.LeaderTemplate
				for i := range tpl.Spec.Containers {
					c := &tpl.Spec.Containers[i]
					for _, words := range [][]string{c.Command, c.Args} {
						for j, w := range words {
							if strings.Contains(w, "--tensor-parallel-size 16") {
								words[j] = strings.ReplaceAll(w, "--tensor-parallel-size 16", flag)
								rewritten++
							} else if w == "--tensor-parallel-size" && j+1 < len(words) && words[j+1] == "16" {
								words[j], words[j+1] = "--tensor-parallel-size", "1"
								if flag != "" {
									words[j], words[j+1] = strings.Fields(flag)[0], strings.Fields(flag)[1]
								}
								rewritten++
							}
						}
					}
				}
			}
			require.Positive(t, rewritten, "the rendered leader gives the server's flag")
			require.Contains(t, strings.Join(check(t, "gpus/gpus-asked-are-gpus-used", tree), "\n"), "but its group of 2 pods asks for 16")
		})
	}
}
