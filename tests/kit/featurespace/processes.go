// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	shellquote "github.com/kballard/go-shellquote"
	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// Programs a process may be.
const (
	ProgramVLLM           = "vLLM server"
	ProgramRayHead        = "Ray head"
	ProgramRayWorker      = "Ray worker"
	ProgramRoutingSidecar = "routing sidecar"
	ProgramLoRALoader     = "LoRA loader"
	ProgramRequester      = "dual-pods requester"
	ProgramEndpointPicker = "Endpoint Picker"
	ProgramOther          = "other program"
)

// A Process is one program a container runs, read from its command line as the program would
// read it: the ports it listens on, the ports of its pod it sends to, the GPUs it uses.
type Process struct {
	Container string
	Program   string
	// Name says which process it is in messages (its container, its rank).
	Name    string
	Listens []int32
	// Serves says what it serves on a port it listens on, where one program serves several
	// protocols (an Endpoint Picker: ext_proc on --grpc-port, gRPC health, metrics).
	Serves map[int32]string
	// PortFlags are the values of every --port its command line gives (a server reads the last).
	PortFlags []string
	// Targets are ports of its own pod it sends requests to, each to a program of a kind.
	Targets []Target
	// TensorPipeline is a vLLM server's tensor x pipeline parallel size: the GPUs it spans.
	TensorPipeline int64
	// Devices are CUDA_VISIBLE_DEVICES, nil when unset.
	Devices []string
	// Removes are the request headers a proxy removes before anything reads them (an Envoy's
	// early header mutations).
	Removes []string
	// ExtProcMessageTimeouts are how long a proxy waits for the picker's answer to a message,
	// one an ext_proc filter.
	ExtProcMessageTimeouts []time.Duration
}

// A Target is a port of the pod a process sends to, and the program that must answer there.
type Target struct {
	Port    int32
	Program string
	What    string
	// Serves, when set, is what the program must serve on the port (its Process.Serves).
	Serves string
}

func (p *Process) String() string { return fmt.Sprintf("%s %q", p.Program, p.Name) }

// readProcesses reads what each long-running container of the pod runs.
// files are the tree's ConfigMaps' data by name, for a program that reads its configuration from one.
func (p *Pod) readProcesses(files map[string]map[string]string) error {
	for _, c := range p.containers() {
		if isEnvoy(c) {
			proc, err := envoyProcess(c, p, files)
			if err != nil {
				return fmt.Errorf("container %s: %w", c.Name, err)
			}
			p.Processes = append(p.Processes, proc)
			continue
		}
		procs, err := containerProcesses(c)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
		p.Processes = append(p.Processes, procs...)
	}
	return nil
}

// containerProcesses are the processes a container runs: a vLLM server (or one a data parallel
// rank, or Ray's head and a server, from a shell script), llm-d's routing sidecar, the LoRA
// loader, FMA's requester, an Endpoint Picker; any other program listens on what it declares.
func containerProcesses(c *corev1.Container) ([]*Process, error) {
	switch {
	case c.Name == api.RoutingSidecarName:
		return []*Process{routingSidecar(c)}, nil
	case c.Name == api.LoRALoaderContainerName:
		return []*Process{loraLoader(c)}, nil
	case envValue(c, "SPI_PORT") != "" && envValue(c, "PROBES_PORT") != "":
		return []*Process{{Container: c.Name, Program: ProgramRequester, Name: c.Name,
			Listens: []int32{atoi32(envValue(c, "PROBES_PORT")), atoi32(envValue(c, "SPI_PORT"))}}}, nil
	case argv(c.Args).has("--grpc-port"):
		proc := &Process{Container: c.Name, Program: ProgramEndpointPicker, Name: c.Name, Serves: map[int32]string{}}
		for f, serves := range map[string]string{"--grpc-port": ServesExtProc, "--grpc-health-port": ServesGRPCHealth, "--metrics-port": "metrics"} {
			if v, found := argv(c.Args).value(f); found {
				proc.Listens = append(proc.Listens, atoi32(v))
				proc.Serves[atoi32(v)] = serves
			}
		}
		slices.Sort(proc.Listens)
		return []*Process{proc}, nil
	case isShellScript(c):
		return scriptProcesses(c)
	case runsVLLM(c):
		words := commandLine(c)
		if len(c.Command) == 0 {
			words = append([]string{"vllm", "serve"}, words...) // the image's entrypoint
		}
		return []*Process{vllmProcess(c, c.Name, words, envDevices(c))}, nil
	}
	proc := &Process{Container: c.Name, Program: ProgramOther, Name: c.Name}
	for _, cp := range c.Ports {
		proc.Listens = append(proc.Listens, cp.ContainerPort)
	}
	return []*Process{proc}, nil
}

// ServesExtProc: an Endpoint Picker serves Envoy's external processing on its --grpc-port (every
// release's pkg/epp/server/options.go, or cmd/epp/runner/runner.go in GIE v1.2.0).
const ServesExtProc = "ext_proc"

// ServesGRPCHealth: an Endpoint Picker answers gRPC health checks on its --grpc-health-port.
const ServesGRPCHealth = "gRPC health"

// isEnvoy: the container runs Envoy (its command, or an image of envoyproxy's).
func isEnvoy(c *corev1.Container) bool {
	return (len(c.Command) > 0 && path.Base(c.Command[0]) == "envoy") || strings.Contains(c.Image, "envoyproxy/envoy")
}

// scriptProcesses are the processes of a `sh -c` script, line by line: `ray start --head`,
// `ray start --address`, and each `vllm serve` (a data parallel rank's line ends in `&`; a
// CUDA_VISIBLE_DEVICES= assignment before it is its environment).
func scriptProcesses(c *corev1.Container) ([]*Process, error) {
	words := commandLine(c)
	script := words[len(words)-1]
	var out []*Process
	rank := 0
	for _, line := range strings.Split(script, "\n") {
		for _, command := range strings.Split(line, " && ") {
			words, err := shellquote.Split(command)
			if err != nil || len(words) == 0 {
				continue // the script's own shell code (functions, loops), not a program's command
			}
			if i := indexOf(words, "&"); i >= 0 {
				words = words[:i]
			}
			if words[0] == "exec" {
				words = words[1:]
			}
			devices := envDevices(c)
			for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
				if v, ok := strings.CutPrefix(words[0], "CUDA_VISIBLE_DEVICES="); ok {
					devices = strings.Split(v, ",")
				}
				words = words[1:]
			}
			switch {
			case len(words) >= 3 && path.Base(words[0]) == "ray" && words[1] == "start" && indexOf(words, "--head") >= 0:
				head := &Process{Container: c.Name, Program: ProgramRayHead, Name: c.Name + " ray head"}
				if v, found := argv(words).value("--port"); found {
					head.Listens = []int32{atoi32(v)}
				}
				out = append(out, head)
			case len(words) >= 2 && path.Base(words[0]) == "ray" && words[1] == "start":
				out = append(out, &Process{Container: c.Name, Program: ProgramRayWorker, Name: c.Name + " ray worker"})
			case len(words) >= 2 && path.Base(words[0]) == "vllm" && words[1] == "serve":
				name := c.Name
				if indexOf(words, "--data-parallel-rank") >= 0 {
					name = fmt.Sprintf("%s local rank %d", c.Name, rank)
					rank++
				}
				out = append(out, vllmProcess(c, name, words, devices))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no program found in its script %q", script)
	}
	return out, nil
}

// vllmProcess is a vLLM server of a command line: its port (the last --port, else 8000) and GPUs.
func vllmProcess(c *corev1.Container, name string, words, devices []string) *Process {
	proc := &Process{Container: c.Name, Program: ProgramVLLM, Name: name, Devices: devices, PortFlags: argv(words).values("--port")}
	port := int32(api.DefaultServingPort)
	if len(proc.PortFlags) > 0 {
		port = atoi32(proc.PortFlags[len(proc.PortFlags)-1])
	}
	proc.Listens = []int32{port}
	proc.TensorPipeline = argv(words).size("--tensor-parallel-size", "-tp") * argv(words).size("--pipeline-parallel-size", "-pp")
	return proc
}

// routingSidecar is llm-d's routing (disaggregation) sidecar: it listens on --port (+ i for each
// data parallel rank) and forwards to the model server's port (+ i).
func routingSidecar(c *corev1.Container) *Process {
	proc := &Process{Container: c.Name, Program: ProgramRoutingSidecar, Name: c.Name, PortFlags: argv(c.Args).values("--port")}
	ranks := int32(1)
	if v, found := argv(c.Args).value("--data-parallel-size"); found {
		ranks = atoi32(v)
	}
	listen, _ := argv(c.Args).value("--port")
	port := atoi32(listen)
	server, found := argv(c.Args).value("--model-server-port")
	if !found {
		server, _ = argv(c.Args).value("--vllm-port")
	}
	for i := range ranks {
		proc.Listens = append(proc.Listens, port+i)
		proc.Targets = append(proc.Targets, Target{Port: atoi32(server) + i, Program: ProgramVLLM, What: "the model server it forwards to"})
	}
	return proc
}

// loraLoader is the LoRA loader (cmd/fusioninfer-lora-loader): it listens on --listen (default
// :8091) and loads adapters into each server at a --server (it repeats: one a data parallel rank).
func loraLoader(c *corev1.Container) *Process {
	proc := &Process{Container: c.Name, Program: ProgramLoRALoader, Name: c.Name}
	listen, found := argv(c.Args).value("--listen")
	if !found {
		listen = ":" + strconv.Itoa(vllm.LoRALoaderPort)
	}
	_, port, _ := strings.Cut(listen, ":")
	proc.Listens = []int32{atoi32(port)}
	for _, server := range argv(c.Args).values("--server") { // one a data parallel rank
		if u, err := url.Parse(server); err == nil {
			proc.Targets = append(proc.Targets, Target{Port: atoi32(u.Port()), Program: ProgramVLLM, What: "a server it loads adapters into (--server)"})
		}
	}
	return proc
}

func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func envDevices(c *corev1.Container) []string {
	if v := envValue(c, "CUDA_VISIBLE_DEVICES"); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// atoi32 is a port or count; 0 for what is not a number (which no program listens on).
func atoi32(s string) int32 {
	n, _ := strconv.ParseInt(s, 10, 32)
	return int32(n)
}

// commandLine is what a container runs: its command and its args, one list.
func commandLine(c *corev1.Container) []string {
	return append(append([]string{}, c.Command...), c.Args...)
}

// isShellScript: the container runs a POSIX shell with -c (or options that hold c: -ec), whose
// last word is the script.
func isShellScript(c *corev1.Container) bool {
	if len(c.Command) == 0 || !slices.Contains([]string{"sh", "bash", "dash", "ash", "zsh"}, path.Base(c.Command[0])) {
		return false
	}
	return slices.ContainsFunc(commandLine(c)[1:], func(w string) bool {
		return w == "-c" || (strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c"))
	})
}

// runsVLLM: the container runs vLLM's server: `vllm serve`, one of its modules
// (python -m vllm.entrypoints...), or no command in an image of vLLM's, whose entrypoint is
// `vllm serve` (vllm/vllm-openai's Dockerfile).
func runsVLLM(c *corev1.Container) bool {
	words := commandLine(c)
	if len(c.Command) == 0 {
		repository, _, _ := strings.Cut(path.Base(c.Image), ":")
		return repository == "vllm" || strings.HasPrefix(repository, "vllm-")
	}
	for i, w := range words {
		if strings.HasPrefix(w, "vllm.entrypoints") || (path.Base(w) == "vllm" && i+1 < len(words) && words[i+1] == "serve") {
			return true
		}
	}
	return false
}
