// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/expansion"
)

// Precise prefix-cache routing, read as its programs read it: the picker from its configuration
// file (llm-d-router v0.10.0's precise-prefix-cache-producer, with llm-d-kv-cache's defaults), each
// server from the command line its container runs, a data parallel pod's ranks by running its
// script's statements in a shell interpreter (mvdan.cc/sh's) with the pod's variables, after the
// kubelet's $(VAR) expansion of a container's arguments.

// podIP stands for a pod's address in the variables the kubelet and the shell give its servers.
const podIP = "10.0.0.1"

// pickerIndex is what the picker's producer expects of the servers.
type pickerIndex struct {
	socketPort      int32
	topicFilter     string
	blockSizeTokens int
	hashSeed        string
	model           string // the token producer's modelName
	tokenizerURL    string // its vllm.url
}

// readPickerIndex reads the producer and the token producer from the picker's configuration, over
// llm-d-kv-cache v0.9.0's defaults (pkg/kvevents/pool.go DefaultConfig: socket 5557, filter "kv@";
// pkg/kvcache/kvblock/token_processor.go: 16 tokens a block, blockSize for an older
// configuration); false when it has no producer.
func readPickerIndex(tree *render.Tree) (*pickerIndex, bool, error) {
	text, _ := pickerConfigText(tree)
	var cfg struct {
		Plugins []struct {
			Type       string          `json:"type"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, false, err
	}
	index := &pickerIndex{socketPort: 5557, topicFilter: "kv@", blockSizeTokens: 16}
	found := false
	for _, p := range cfg.Plugins {
		switch p.Type {
		case "precise-prefix-cache-producer":
			found = true
			var params struct {
				TokenProcessorConfig *struct {
					BlockSize       int    `json:"blockSize"`
					BlockSizeTokens int    `json:"blockSizeTokens"`
					HashSeed        string `json:"hashSeed"`
				} `json:"tokenProcessorConfig"`
				KVEventsConfig *struct {
					TopicFilter        *string `json:"topicFilter"`
					PodDiscoveryConfig *struct {
						SocketPort int32 `json:"socketPort"`
					} `json:"podDiscoveryConfig"`
				} `json:"kvEventsConfig"`
			}
			if len(p.Parameters) > 0 {
				if err := json.Unmarshal(p.Parameters, &params); err != nil {
					return nil, false, err
				}
			}
			if tp := params.TokenProcessorConfig; tp != nil {
				index.hashSeed = tp.HashSeed
				switch {
				case tp.BlockSizeTokens > 0:
					index.blockSizeTokens = tp.BlockSizeTokens
				case tp.BlockSize > 0:
					index.blockSizeTokens = tp.BlockSize
				}
			}
			if ev := params.KVEventsConfig; ev != nil {
				if ev.TopicFilter != nil {
					index.topicFilter = *ev.TopicFilter
				}
				if ev.PodDiscoveryConfig != nil {
					index.socketPort = ev.PodDiscoveryConfig.SocketPort
				}
			}
		case "token-producer":
			var params struct {
				ModelName string `json:"modelName"`
				VLLM      struct {
					URL string `json:"url"`
				} `json:"vllm"`
			}
			if err := json.Unmarshal(p.Parameters, &params); err != nil {
				return nil, false, err
			}
			index.model, index.tokenizerURL = params.ModelName, params.VLLM.URL
		}
	}
	return index, found, nil
}

// publisher is a vLLM server of a pod that publishes KV-cache events: where it binds, its topic,
// its block size and hash seed.
type publisher struct {
	container       string
	binds           int32
	topic           string
	blockSize, seed string
}

// publishers are the servers of a pod that publish events. A server's --kv-events-config is vLLM's
// KVEventsConfig; it binds its endpoint's port plus its data parallel rank
// (vllm/distributed/kv_events.py ZmqEventPublisher.offset_endpoint_port). Its block size is its
// last --block-size, else vLLM's 16 (vllm/config/cache.py).
func publishers(pod *Pod) ([]publisher, error) {
	var out []publisher
	commands, err := vllmCommands(pod)
	if err != nil {
		return nil, err
	}
	for _, cmd := range commands {
		c, words := cmd.container, cmd.words
		raw, found := argv(words).value("--kv-events-config")
		if !found {
			continue
		}
		var config struct {
			Enable   bool   `json:"enable_kv_cache_events"`
			Endpoint string `json:"endpoint"`
			Topic    string `json:"topic"`
		}
		if err := json.Unmarshal([]byte(raw), &config); err != nil {
			return nil, fmt.Errorf("container %s: --kv-events-config %q: %w", c.Name, raw, err)
		}
		if !config.Enable {
			continue
		}
		port := atoi32(config.Endpoint[strings.LastIndex(config.Endpoint, ":")+1:])
		rank, _ := argv(words).value("--data-parallel-rank")
		blockSize := "16"
		if sizes := argv(words).values("--block-size"); len(sizes) > 0 {
			blockSize = sizes[len(sizes)-1]
		}
		out = append(out, publisher{container: c.Name, binds: port + atoi32(rank), topic: config.Topic, blockSize: blockSize,
			seed: envValue(c, api.PythonHashSeedVariable)})
	}
	return out, nil
}

// vllmCommand is the command line of a vLLM server a container runs.
type vllmCommand struct {
	container *corev1.Container
	words     []string
}

// vllmCommands are the vLLM servers of a pod, as they are started: a container's own command line
// after the kubelet's expansion, or each `vllm` command of its shell script as the shell expands it
// (one a data parallel rank).
func vllmCommands(pod *Pod) ([]vllmCommand, error) {
	var out []vllmCommand
	for _, c := range pod.containers() {
		switch {
		case isShellScript(c):
			words := kubeletExpand(c, commandLine(c))
			lines, err := scriptCommands(words[len(words)-1], podVariables(pod, c))
			if err != nil {
				return nil, fmt.Errorf("%s: container %s: %w", pod.Desc, c.Name, err)
			}
			for _, line := range lines {
				out = append(out, vllmCommand{c, line})
			}
		case runsVLLM(c):
			out = append(out, vllmCommand{c, kubeletExpand(c, commandLine(c))})
		}
	}
	return out, nil
}

// kubeletExpand expands $(VAR) in a container's command and args as the kubelet does, for the
// variables it can know here: POD_IP from the pod's address.
func kubeletExpand(c *corev1.Container, words []string) []string {
	return expansion.All(words, containerVariables(c, map[string]string{}))
}

// podVariables are what a server's shell sees: its container's variables and LWS's (the worker
// index on a worker pod, the leader's address).
func podVariables(pod *Pod, c *corev1.Container) map[string]string {
	vars := map[string]string{lwsv1.LwsLeaderAddress: "leader.featurespace"}
	if w := pod.Labels[lwsv1.WorkerIndexLabelKey]; w != "" && w != "0" {
		vars[lwsv1.LwsWorkerIndex] = w
	}
	return containerVariables(c, vars)
}

// containerVariables adds to vars the container's variables that can be known here: the literal
// ones, and the pod's address from the downward API.
func containerVariables(c *corev1.Container, vars map[string]string) map[string]string {
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			vars[e.Name] = podIP
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		}
	}
	return vars
}

// scriptCommands are the argument lists of the `vllm` commands a script's top-level statements
// run, each expanded as the shell would at that point: the script's assignments before it
// (arithmetic and parameters) in the pod's variables.
func scriptCommands(script string, vars map[string]string) ([][]string, error) {
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	env := map[string]expand.Variable{}
	for k, v := range vars {
		env[k] = expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: v}
	}
	cfg := &expand.Config{Env: expand.FuncEnviron(func(name string) string { return env[name].Str })}
	var out [][]string
	var run func(cmd syntax.Command) error
	run = func(cmd syntax.Command) error {
		switch c := cmd.(type) {
		case *syntax.BinaryCmd: // a && b: both run when the first succeeds, as every command here does
			if err := run(c.X.Cmd); err != nil {
				return err
			}
			return run(c.Y.Cmd)
		case *syntax.CallExpr:
			if len(c.Args) == 0 { // assignments
				for _, a := range c.Assigns {
					value := ""
					if a.Value != nil {
						var err error
						if value, err = expand.Literal(cfg, a.Value); err != nil {
							return err
						}
					}
					env[a.Name.Value] = expand.Variable{Set: true, Kind: expand.String, Str: value}
				}
				return nil
			}
			words, err := expand.Fields(cfg, c.Args...)
			if err != nil {
				return err
			}
			if len(words) > 0 && words[0] == "exec" {
				words = words[1:]
			}
			if len(words) > 0 && (words[0] == "vllm" || strings.HasSuffix(words[0], "/vllm")) {
				out = append(out, words)
			}
		}
		return nil // functions, loops, traps: the script's own code
	}
	for _, stmt := range file.Stmts {
		if err := run(stmt.Cmd); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Every endpoint of the pool (a pod's port of rank i) has a server in its pod that binds the port
// the picker dials for it (socketPort + i), the pod declares that port, and the server's topic
// begins with the picker's filter and names that endpoint (address:port, the index's key of the
// pod's blocks) and the model the picker tokenizes for.
func everyEndpointPublishesWhereThePickerDials(tree *render.Tree, pods []*Pod) []string {
	index, found, err := readPickerIndex(tree)
	if err != nil {
		return []string{err.Error()}
	}
	if !found {
		return nil
	}
	name, selector, ports, ok := pool(tree)
	if !ok {
		return []string{"the picker indexes KV-cache events, and the tree has no InferencePool"}
	}
	var out []string
	for _, pod := range pods {
		if !selects(selector, pod) {
			continue
		}
		pubs, err := publishers(pod)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", pod.Desc, err))
			continue
		}
		for i, port := range ports {
			dial := index.socketPort + int32(i)
			want := fmt.Sprintf("%s%s:%d@%s", index.topicFilter, podIP, port, index.model)
			var bound *publisher
			for j := range pubs {
				if pubs[j].binds == dial {
					bound = &pubs[j]
				}
			}
			switch {
			case bound == nil:
				out = append(out, fmt.Sprintf("%s: the picker dials port %d for the endpoint of port %d (InferencePool %s), where no server publishes (%v)",
					pod.Desc, dial, port, name, pubs))
			case bound.topic != want || !strings.HasPrefix(bound.topic, index.topicFilter):
				out = append(out, fmt.Sprintf("%s: the server on port %d publishes topic %q; the picker's index looks the endpoint up as %q",
					pod.Desc, dial, bound.topic, want))
			}
			if !pod.DeclaresPort(dial) {
				out = append(out, fmt.Sprintf("%s: the picker dials port %d, which the pod does not declare", pod.Desc, dial))
			}
		}
	}
	return out
}

// Every publishing server hashes blocks as the picker does: its --block-size is the producer's
// blockSizeTokens and its PYTHONHASHSEED the producer's hashSeed; the token producer calls a
// Service of the tree whose pods are none of the pool's.
func serversHashBlocksAsThePicker(tree *render.Tree, pods []*Pod) []string {
	index, found, err := readPickerIndex(tree)
	if err != nil || !found {
		return nil // the other invariant reports a configuration that does not read
	}
	_, selector, _, _ := pool(tree)
	var out []string
	for _, pod := range pods {
		pubs, err := publishers(pod)
		if err != nil {
			continue
		}
		for _, p := range pubs {
			if p.blockSize != strconv.Itoa(index.blockSizeTokens) {
				out = append(out, fmt.Sprintf("%s: container %s stores blocks of %s tokens; the picker hashes blocks of %d", pod.Desc, p.container, p.blockSize, index.blockSizeTokens))
			}
			if p.seed != index.hashSeed {
				out = append(out, fmt.Sprintf("%s: container %s hashes with PYTHONHASHSEED %q; the picker with %q", pod.Desc, p.container, p.seed, index.hashSeed))
			}
		}
	}
	u, err := url.Parse(index.tokenizerURL)
	if err != nil || u.Hostname() == "" {
		return append(out, fmt.Sprintf("the token producer's vllm.url %q names no Service", index.tokenizerURL))
	}
	for _, svc := range Objects[*corev1.Service](tree) {
		if svc.Name != u.Hostname() {
			continue
		}
		for _, pod := range pods {
			if selectsWithMap(svc.Spec.Selector, pod) && selects(selector, pod) {
				out = append(out, fmt.Sprintf("%s: the tokenizer Service %s selects it, and so does the pool: the picker would take a tokenizer for a server", pod.Desc, svc.Name))
			}
		}
		return out
	}
	return append(out, fmt.Sprintf("the token producer calls %s, a Service the tree does not have", index.tokenizerURL))
}

func selectsWithMap(selector map[string]string, pod *Pod) bool {
	return len(selector) > 0 && selects(selector, pod)
}
