// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// image is what a program stands for: an image repository (without its registry) at a tag, ""
// for every tag, and the processes the program runs as for a container of it. An image that
// holds several programs has an entry for each, told apart by the container's command.
type image struct {
	repository, tag string
	// command is the program of the image the container runs (its command's first word, a path
	// or a name on the image's PATH); "" for the image's entrypoint.
	command  string
	binary   binary
	launches func(run *containerRun) ([]launch, error)
	// execArgs maps the arguments of an exec probe that runs the program itself, as launches maps
	// the container's; nil: the suite runs no exec probe of the image's program.
	execArgs func(run *containerRun, words []string) ([]string, error)
	// python: the image has python3 (every vLLM image: vLLM is a Python program), so the suite runs
	// an exec probe of python3 with this machine's (a data parallel server's,
	// render.RankReadinessProbe).
	python bool
}

// launch is one process of a container: its arguments and variables, the container ports it
// serves, the data parallel rank it is (vLLM's --data-parallel-rank; noRank for none), and how
// long after the container starts its program runs (ListenAfterAnnotation; 0: at once), and
// what runs beside it.
type launch struct {
	args, env   []string
	ports       []int32
	rank        int
	listenAfter time.Duration
	// kvEvents publishes a simulated vLLM's KV-cache events where vLLM would (kvevents.go).
	kvEvents *kvEventsPublisher
}

// noRank is the rank of a process that serves no data parallel rank.
const noRank = -1

// images are the container images the suite has programs for. llm-d-inference-sim stands for
// every vLLM (as llm-d's own tests use it); an Endpoint Picker only for its own release; the LoRA
// loader sidecar (the downloader's image at any tag: this project's release) is the loader of
// this checkout; Envoy (a standalone router's sidecar, any tag) is the test gateway configured
// from the container's bootstrap (envoy.go).
var images = []image{
	{repository: "vllm/vllm-openai", binary: inferenceSim, launches: modelServerLaunches, python: true},
	{repository: "gateway-api-inference-extension/epp", tag: GIEEndpointPickerVersion, binary: gieEndpointPicker, launches: containerLaunch},
	{repository: "gateway-api-inference-extension/lwepp", tag: GIELightweightEndpointPickerVersion, binary: gieLightweightEndpointPicker,
		launches: containerLaunch},
	{repository: imageRepository(render.DownloaderImage), command: render.LoRALoaderCommand, binary: loraLoader, launches: loraLoaderLaunch,
		execArgs: loraLoaderArgs},
	{repository: "envoyproxy/envoy", binary: envoyStandin, launches: envoyLaunch},
}

// imageRepository is an image reference's repository, without its registry, tag and digest.
func imageRepository(ref string) string {
	name, _ := splitImage(ref)
	if first, rest, ok := strings.Cut(name, "/"); ok && strings.ContainsAny(first, ".:") {
		return rest
	}
	return name
}

// splitImage is an image reference's name (registry/repository) and tag ("" for none).
func splitImage(ref string) (name, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// containerPrograms are the binaries of images.
func containerPrograms() []binary {
	var out []binary
	for _, im := range images {
		out = append(out, im.binary)
	}
	return out
}

// programOf is the entry of images for a container: its image reference
// (registry/repository:tag@digest) and, for an image of several programs, its command.
func programOf(c *corev1.Container) (image, bool) {
	name, tag := splitImage(c.Image)
	command := ""
	if len(c.Command) > 0 {
		command = path.Base(c.Command[0])
	}
	for _, im := range images {
		if (name == im.repository || strings.HasSuffix(name, "/"+im.repository)) && (im.tag == "" || tag == im.tag) &&
			(im.command == "" || command == im.command) {
			return im, true
		}
	}
	return image{}, false
}

// programImagePattern is a regular expression an image reference matches when a program stands
// for the image's entrypoint, as programOf decides. kwok's selector uses it: a pod of a program
// that is another's sidecar (the LoRA loader) is picked by its server's image, and a pod of the
// image's other programs (the download Job's) is left to kwok, which runs it to completion.
func programImagePattern() string {
	var alternatives []string
	for _, im := range images {
		if im.command != "" {
			continue
		}
		tag := `(:[^/@]+)?`
		if im.tag != "" {
			tag = ":" + regexp.QuoteMeta(im.tag)
		}
		alternatives = append(alternatives, `(^|/)`+regexp.QuoteMeta(im.repository)+tag+`(@.*)?$`)
	}
	return strings.Join(alternatives, "|")
}

// programPodsQuery is a kwok selector key (a jq query) that yields true for each container of a
// pod whose image a program stands for.
func programPodsQuery() string {
	return ".spec.containers.[].image | test(" + strconv.Quote(programImagePattern()) + ")"
}

func hasProgram(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if _, ok := programOf(&c); ok {
			return true
		}
	}
	return false
}
