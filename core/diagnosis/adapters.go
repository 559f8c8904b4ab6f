// SPDX-License-Identifier: Apache-2.0

package diagnosis

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// LoRALoader is what a server pod's LoRA loader said of itself (cmd/fusioninfer-lora-loader, its
// GET /adapters, docs/design/0027-lora-adapters.md): its state, or why it could not be asked.
type LoRALoader struct {
	State *vllm.LoaderState
	// Err is why the loader's state could not be read (its pod's proxy refused, it did not answer).
	Err string
}

// PodAdapters are the LoRA adapters of one server pod, as its loader reports them: those its
// server has loaded, those that failed with their cause, or why they are not known.
type PodAdapters struct {
	Pod    string          `json:"pod"`
	Loaded []string        `json:"loaded"`
	Failed []FailedAdapter `json:"failed,omitempty"`
	// Unknown says why the pod's adapters are not known: its loader could not be asked, or has
	// not tried the list yet (the list unreadable, the server not answering).
	Unknown string `json:"unknown,omitempty"`
}

// FailedAdapter is an adapter of the list its pod's server has not loaded, and why.
type FailedAdapter struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Cause string `json:"cause"`
}

// RunsLoRALoader reports whether a pod runs the adapters' loader beside its server: the pods whose
// loaders Observed.LoRALoaders holds.
func RunsLoRALoader(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == render.LoRALoaderContainerName {
			return true
		}
	}
	return false
}

// adapters are the adapters of an LWS's pods that run the loader, from what their loaders said.
func (d *diagnoser) adapters(lws string) []PodAdapters {
	var out []PodAdapters
	for i := range d.pods[lws] {
		pod := &d.pods[lws][i]
		if !RunsLoRALoader(pod) {
			continue
		}
		var said *LoRALoader
		if l, ok := d.o.LoRALoaders[pod.Name]; ok {
			said = &l
		}
		out = append(out, adaptersOf(pod.Name, said))
	}
	return out
}

// adaptersOf is one pod's adapters from what its loader said (nil: it was not asked).
func adaptersOf(pod string, said *LoRALoader) PodAdapters {
	out := PodAdapters{Pod: pod, Loaded: []string{}}
	switch {
	case said == nil:
		out.Unknown = "its loader was not asked (the pod does not run, or has no address yet)"
		return out
	case said.State == nil:
		out.Unknown = "its loader could not be asked: " + said.Err
		return out
	}
	for _, a := range said.State.Adapters {
		if a.Loaded {
			out.Loaded = append(out.Loaded, a.Name)
		} else {
			out.Failed = append(out.Failed, FailedAdapter{Name: a.Name, Path: a.Path, Cause: a.Error})
		}
	}
	if len(said.State.Adapters) == 0 && said.State.Problem != "" {
		out.Unknown = said.State.Problem // nothing tried yet: why
	}
	return out
}

// loaderProblem is what a pod's loader says holds its list back, "" when it was not asked or
// says nothing.
func (d *diagnoser) loaderProblem(pod string) string {
	if l, ok := d.o.LoRALoaders[pod]; ok && l.State != nil {
		return l.State.Problem
	}
	return ""
}
