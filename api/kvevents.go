// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"path"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// Precise prefix-cache routing (a router's strategy precise-prefix-cache): every serving pod
// publishes its KV-cache events where the picker dials it, under the topic its index looks up, in
// blocks of the size and seed the picker hashes (eppconfig.KVEvents). What the render does with it
// is core/render's kvevents.go and tokenizer.go; docs/design/0048-precise-prefix-cache-routing.md
// says why.

// PythonHashSeedVariable is the servers' hash seed (vLLM seeds the hash of a prompt's first block
// with it, vllm/v1/core/kv_cache_utils.py init_none_hash), which the picker's producer hashes with.
const PythonHashSeedVariable = "PYTHONHASHSEED"

// TokenizerPort is where the tokenizer Deployment's `vllm launch render` serves (vLLM's default).
const TokenizerPort = 8000

// TokenizerName names the tokenizer Deployment and its Service: {service}-tokenizer.
func TokenizerName(serviceName string) string { return serviceName + "-tokenizer" }

// PreciseRouting reports whether the service's router routes on its servers' KV-cache events.
func (s *InferenceServiceSpec) PreciseRouting() bool {
	r := s.Router()
	return r != nil && r.Strategy == eppconfig.StrategyPrecisePrefixCache
}

// RunsTokenizer reports whether the router's picker calls the service's tokenizer Deployment:
// strategy precise-prefix-cache with its preset (a configuration of the user's names its own).
func (r *Role) RunsTokenizer() bool {
	return r.Strategy == eppconfig.StrategyPrecisePrefixCache && r.EndpointPickerConfig == ""
}

// EndpointPickerTokenizer is endpointPicker.tokenizer, empty when unset.
func (r *Role) EndpointPickerTokenizer() RouterTokenizer {
	if r.EndpointPicker == nil || r.EndpointPicker.Tokenizer == nil {
		return RouterTokenizer{}
	}
	return *r.EndpointPicker.Tokenizer
}

// KVEventsPorts are where a pod of ranks publishes: socketPort + i for local rank i.
func KVEventsPorts(kv *eppconfig.KVEvents, ranks int32) []int32 {
	return RankPorts(int32(kv.SocketPort), ranks)
}

// KVEventsPortName names local rank i's events port: kv-events, kv-events-1, ...
func KVEventsPortName(i int) string {
	if i == 0 {
		return "kv-events"
	}
	return "kv-events-" + strconv.Itoa(i)
}

// validateKVEvents agrees the servers and the picker of a precise router on what the servers
// publish (resolved.Routing.KVEvents), after the router's selection and the models are resolved:
// for a preset, from the servers (their own --block-size and PYTHONHASHSEED, else the defaults);
// for a configuration of the user's, from it, which the servers must then match.
func validateKVEvents(spec *InferenceServiceSpec, serviceName string, rolesPath *field.Path, resolved *Resolved) field.ErrorList {
	routing := resolved.Routing
	if !spec.PreciseRouting() || routing == nil || routing.Selection == nil {
		return nil
	}
	routerPath := rolesPath.Index(slices.IndexFunc(spec.Roles, func(r Role) bool { return r.ComponentType == ComponentTypeRouter }))
	kv := &eppconfig.KVEvents{TokenizerURL: fmt.Sprintf("http://%s:%d", TokenizerName(serviceName), TokenizerPort)}
	var errs field.ErrorList
	// The model every server serves, which the tokenizer serves too and every topic names.
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() {
			continue
		}
		served, servedPath, problems := servedModel(spec, role, rolesPath.Index(i), routerPath, resolved)
		if errs = append(errs, problems...); len(problems) > 0 {
			continue
		}
		switch {
		case kv.Model == "":
			kv.Model = served
		case kv.Model != served:
			errs = append(errs, field.Invalid(servedPath, served, fmt.Sprintf(
				"%s is %s: the picker tokenizes for one model, and every server's events name it: serve %q, as the other roles do",
				routerPath.Child("strategy"), eppconfig.StrategyPrecisePrefixCache, kv.Model)))
		}
	}
	if routing.Selection.Custom() {
		if err := routing.Selection.IndexKVEvents(kv); err != nil {
			return append(errs, field.Invalid(routerPath.Child("endpointPickerConfig"), "(the configuration)", err.Error()))
		}
	} else {
		kv.BlockSize, kv.HashSeed, kv.SocketPort = 0, "", eppconfig.DefaultKVEventsPort
	}
	// The block size and seed: a preset's are the first server's that gives them (else the
	// defaults); a user's configuration's are its producer's. Every server agrees.
	preset := !routing.Selection.Custom()
	sizeFrom, seedFrom := "", ""
	for _, s := range servingServers(spec, rolesPath) {
		role, server, serverPath := s.role, s.server, s.path
		if vllm.IsShellScript(server) {
			errs = append(errs, field.Invalid(serverPath.Child("command"), server.Command, fmt.Sprintf(
				"%s is %s: each server is given where to publish its KV-cache events (%s): give the server's own command and args "+
					"(or none, for the vllm/vllm-openai image), not a shell script", routerPath.Child("strategy"), eppconfig.StrategyPrecisePrefixCache, vllm.FlagKVEventsConfig.Name)))
			continue
		}
		words := vllm.CommandLine(server)
		for _, flag := range vllm.LaunchFlagsOf(vllm.ByPreciseRouting, vllm.Owned) {
			if flag.In(words) {
				errs = append(errs, field.Invalid(serverPath.Child("args"), flag.Name, fmt.Sprintf(
					"%s is %s, which gives every server (every rank) its %s: where it publishes and the topic the picker's index looks up; remove it",
					routerPath.Child("strategy"), eppconfig.StrategyPrecisePrefixCache, flag.Name)))
			}
		}
		if vllm.FlagNoPrefixCaching.In(words) {
			errs = append(errs, field.Invalid(serverPath.Child("args"), vllm.FlagNoPrefixCaching.Name, fmt.Sprintf(
				"%s is %s: a server without prefix caching hashes no block and publishes no KV-cache event to route on; remove it",
				routerPath.Child("strategy"), eppconfig.StrategyPrecisePrefixCache)))
		}
		if given, found := vllm.FlagBlockSize.Value(words); found {
			size, err := strconv.Atoi(given)
			switch {
			case err != nil || size < 1:
				errs = append(errs, field.Invalid(serverPath.Child("args"), vllm.FlagBlockSize.Name+" "+given, "a KV block's size in tokens, a positive number"))
			case preset && kv.BlockSize == 0:
				kv.BlockSize, sizeFrom = size, serverPath.Child("args").String()
			case size != kv.BlockSize:
				errs = append(errs, field.Invalid(serverPath.Child("args"), vllm.FlagBlockSize.Name+" "+given, fmt.Sprintf(
					"the picker hashes a prompt's KV blocks of %d tokens (%s) and finds a pod's blocks by that hash: give every server %s %d, or none",
					kv.BlockSize, blockSizeSource(preset, sizeFrom), vllm.FlagBlockSize.Name, kv.BlockSize)))
			}
		}
		for j, env := range server.Env {
			if env.Name != PythonHashSeedVariable {
				continue
			}
			envPath := serverPath.Child("env").Index(j)
			switch {
			case env.ValueFrom != nil:
				errs = append(errs, field.Invalid(envPath.Child("valueFrom"), "(a reference)", fmt.Sprintf(
					"the picker hashes blocks with the servers' %s, which it must be told: give it as value", PythonHashSeedVariable)))
			case preset && seedFrom == "":
				kv.HashSeed, seedFrom = env.Value, envPath.String()
			case env.Value != kv.HashSeed:
				errs = append(errs, field.Invalid(envPath.Child("value"), env.Value, fmt.Sprintf(
					"the picker hashes a prompt's first block with seed %q (%s): give every server the same %s",
					kv.HashSeed, seedSource(preset, seedFrom), PythonHashSeedVariable)))
			}
		}
		errs = append(errs, validateKVEventsPorts(role, kv, &role.Template.Spec, resolved.ServingPorts[role.Name], rolesPath.Index(s.index))...)
	}
	if preset {
		if kv.BlockSize == 0 {
			kv.BlockSize = eppconfig.DefaultKVBlockSize
		}
		if seedFrom == "" {
			kv.HashSeed = eppconfig.DefaultKVHashSeed
		}
		if err := routing.Selection.IndexKVEvents(kv); err != nil {
			errs = append(errs, field.Invalid(routerPath.Child("strategy"), eppconfig.StrategyPrecisePrefixCache, err.Error()))
		}
	}
	if len(errs) == 0 {
		routing.KVEvents = kv
	}
	return errs
}

func blockSizeSource(preset bool, from string) string {
	if !preset {
		return "its configuration's tokenProcessorConfig.blockSizeTokens"
	}
	if from == "" {
		return "the default"
	}
	return "as " + from + " gives it"
}

func seedSource(preset bool, from string) string {
	if !preset {
		return "its configuration's tokenProcessorConfig.hashSeed"
	}
	return "as " + from + " gives it"
}

// modelPath is where a serving role's model is given: the role's own, else the service's.
func modelPath(role *Role, rolePath *field.Path) *field.Path {
	if role.Model != nil {
		return rolePath.Child("model")
	}
	return field.NewPath("spec", "model")
}

// servedModel is the name a serving role's servers serve their model by, and where it is given:
// the model's (spec.model or the role's), else the server's own command line (its
// --served-model-name, else its model), which the tokenizer then downloads from the Hub as the
// server does; a model the tokenizer cannot read is refused.
func servedModel(spec *InferenceServiceSpec, role *Role, rolePath, routerPath *field.Path, resolved *Resolved) (string, *field.Path, field.ErrorList) {
	strategy := fmt.Sprintf("%s is %s", routerPath.Child("strategy"), eppconfig.StrategyPrecisePrefixCache)
	if m := resolved.Models[ModelOwner(role)]; spec.ModelOf(role) != nil && m != nil {
		if m.LoadFormat == RunaiStreamer {
			return "", nil, field.ErrorList{field.Invalid(modelPath(role, rolePath).Child("loadFormat"), m.LoadFormat, strategy+
				": its tokenizer Deployment reads the model's tokenizer from the model's files, and a model streamed from "+
				"object storage has none on a volume: load it from a cache, a claim or an image")}
		}
		return m.ServedName(), modelPath(role, rolePath).Child("name"), nil
	}
	if role.Template == nil || len(role.Template.Spec.Containers) == 0 {
		return "", nil, nil // the template's own check says what is missing
	}
	serverIndex := ServingContainerIndex(&role.Template.Spec)
	argsPath := rolePath.Child("template", "spec", "containers").Index(serverIndex).Child("args")
	server := &role.Template.Spec.Containers[serverIndex]
	if vllm.IsShellScript(server) {
		return "", nil, nil // refused: the render cannot give a script's server its events flags
	}
	model, found := vllm.Model(server)
	switch {
	case !found:
		return "", nil, field.ErrorList{field.Required(argsPath, strategy+
			": the tokenizer Deployment serves the servers' model, and the server names none: give --model, or spec.model")}
	case path.IsAbs(model):
		return "", nil, field.ErrorList{field.Invalid(argsPath, model, strategy+
			": the tokenizer Deployment cannot read a path of the server's own volumes: give the model as spec.model "+
			"(a claim, an image or a cache), whose files it mounts too")}
	}
	if served, given := vllm.FlagServedModelName.Value(vllm.CommandLine(server)); given {
		return served, argsPath, nil
	}
	return model, argsPath, nil
}

// validateKVEventsPorts keeps the events ports of a pod's ranks off every other port of the pod:
// the ones it declares, its ranks' serving ports, and those the render gives it (a decode
// server's moved ports, the ranks' RPC port, the Ray head's, the LoRA loader's).
func validateKVEventsPorts(role *Role, kv *eppconfig.KVEvents, pod *corev1.PodSpec, servingPort int32, rolePath *field.Path) field.ErrorList {
	ranks := role.LocalRanks()
	events := KVEventsPorts(kv, ranks)
	if last := events[len(events)-1]; last > 65535 {
		return field.ErrorList{field.Invalid(rolePath.Child("parallelism", "dataLocal"), ranks, fmt.Sprintf(
			"local rank i publishes its KV-cache events on port %d + i, past 65535", kv.SocketPort))}
	}
	taken := map[int32]string{}
	for _, p := range RankPorts(servingPort, ranks) {
		taken[p] = "a rank's serving port"
	}
	if role.ComponentType == ComponentTypeDecoder {
		for _, p := range RankPorts(DecodeVLLMPort, ranks) {
			taken[p] = "a decode server's port behind the routing sidecar"
		}
	}
	if role.DataParallel() {
		taken[role.Parallelism.RPCPort()] = "the ranks' RPC port (parallelism.dataRPCPort)"
	}
	if role.MultiNode() {
		taken[RayHeadPort] = "the Ray head's port"
	}
	taken[vllm.LoRALoaderPort] = "the LoRA loader's port"
	var errs field.ErrorList
	for _, p := range events {
		if what, ok := taken[p]; ok {
			errs = append(errs, field.Invalid(rolePath, role.Name, fmt.Sprintf(
				"its ranks publish their KV-cache events on %s (strategy %s), and %d is also %s: move that off %s",
				portRange(int32(kv.SocketPort), ranks), eppconfig.StrategyPrecisePrefixCache, p, what, portRange(int32(kv.SocketPort), ranks))))
		}
	}
	for kind, containers := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for j, c := range containers {
			for k, cp := range c.Ports {
				if cp.ContainerPort >= events[0] && cp.ContainerPort <= events[len(events)-1] {
					errs = append(errs, field.Invalid(rolePath.Child("template", "spec", []string{"initContainers", "containers"}[kind]).Index(j).Child("ports").Index(k).Child("containerPort"),
						cp.ContainerPort, fmt.Sprintf("the servers publish their KV-cache events on %s (strategy %s): use another port",
							portRange(int32(kv.SocketPort), ranks), eppconfig.StrategyPrecisePrefixCache)))
				}
			}
		}
	}
	return errs
}
