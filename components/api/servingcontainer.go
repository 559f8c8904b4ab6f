package api

import (
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// GPUResourceName is the extended resource of NVIDIA GPUs.
const GPUResourceName corev1.ResourceName = "nvidia.com/gpu"

// ServingContainerIndex is the index of the model-server container in a role's template: the
// first container, by the convention every vLLM deployment follows. Sidecars come after it.
const ServingContainerIndex = 0

// GPUsPerPod is the serving container's GPU count (its limit, else its request), 0 if none.
func GPUsPerPod(c *corev1.Container) int64 {
	if q, ok := c.Resources.Limits[GPUResourceName]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[GPUResourceName]; ok {
		return q.Value()
	}
	return 0
}

// IsShellScript reports whether the container runs a shell script (`sh -c "..."`), whose
// server command line cannot be safely extended with more flags.
func IsShellScript(c *corev1.Container) bool {
	if len(c.Command) == 0 {
		return false
	}
	switch path.Base(c.Command[0]) {
	case "sh", "bash", "dash", "ash", "zsh":
	default:
		return false
	}
	for _, a := range append(append([]string{}, c.Command[1:]...), c.Args...) {
		if a == "-c" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c")) {
			return true
		}
	}
	return false
}

// ParallelFlags are vLLM's parallelism flags, each with its short alias.
var ParallelFlags = struct{ Tensor, Pipeline, Data [2]string }{
	Tensor:   [2]string{"--tensor-parallel-size", "-tp"},
	Pipeline: [2]string{"--pipeline-parallel-size", "-pp"},
	Data:     [2]string{"--data-parallel-size", "-dp"},
}

// FlagValue finds a command-line flag in args, in the forms `--flag value` and `--flag=value`,
// under any of its names. The last occurrence wins, as in Python's argparse.
func FlagValue(args []string, names ...string) (value string, found bool) {
	for i := 0; i < len(args); i++ {
		for _, name := range names {
			switch {
			case args[i] == name && i+1 < len(args):
				value, found = args[i+1], true
			case strings.HasPrefix(args[i], name+"="):
				value, found = strings.TrimPrefix(args[i], name+"="), true
			}
		}
	}
	return value, found
}

// parallelSize reads one vLLM parallelism flag: (1, false, nil) when absent.
func parallelSize(args []string, names [2]string) (int64, bool, error) {
	v, found := FlagValue(args, names[:]...)
	if !found {
		return 1, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, true, &parallelSizeError{flag: names[0], value: v}
	}
	return n, true, nil
}

type parallelSizeError struct{ flag, value string }

func (e *parallelSizeError) Error() string {
	return e.flag + " " + strconv.Quote(e.value) + ": must be a positive integer"
}
