// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// The LoRA loader sidecar's launch: the rendered command line with its pod's network mapped to
// this machine.

// loraLoaderLaunch is the LoRA loader sidecar's one process: its command line (containerCommand's)
// with what its pod's network gives it mapped to this machine (loraLoaderArgs).
func loraLoaderLaunch(run *containerRun) ([]launch, error) {
	args, env, err := containerCommand(run)
	if err != nil {
		return nil, err
	}
	if args, err = loraLoaderArgs(run, args); err != nil {
		return nil, err
	}
	// the list's paths are the pod's: the loader finds the adapters' files under its mounts
	root, err := run.root()
	if err != nil {
		return nil, err
	}
	args = append(args, "--root", root)
	return []launch{{args: args, env: env, ports: slices.Sorted(maps.Keys(run.ports)), rank: noRank}}, nil
}

// loraLoaderDefaultListen is the loader's --listen default (cmd/fusioninfer-lora-loader).
var loraLoaderDefaultListen = ":" + strconv.Itoa(vllm.LoRALoaderPort)

// loraLoaderArgs maps the loader's arguments, its container's or its exec readiness probe's
// (`fusioninfer-lora-loader --probe`, which asks the running loader at --listen): each of its
// servers (--server repeats, one a data parallel rank) at localhost, the pod's own network, is
// that server's forwarder at the pod's address; its --listen port is a loopback port of the
// container's own, the same for the loader and its probe.
func loraLoaderArgs(run *containerRun, args []string) ([]string, error) {
	args = slices.Clone(args)
	for i, arg := range args {
		server, inline := strings.CutPrefix(arg, vllm.FlagLoaderServer.Name+"=")
		switch {
		case inline:
		case arg == vllm.FlagLoaderServer.Name && i+1 < len(args):
			server = args[i+1]
		default:
			continue
		}
		u, err := url.Parse(server)
		if err != nil {
			return nil, fmt.Errorf("the loader's --server %q: %w", server, err)
		}
		if host := u.Hostname(); host != "localhost" && host != "127.0.0.1" {
			continue
		}
		u.Host = net.JoinHostPort(run.pod.Status.PodIP, u.Port())
		if inline {
			args[i] = vllm.FlagLoaderServer.Name + "=" + u.String()
		} else {
			args[i+1] = u.String()
		}
	}
	listen, found := vllm.FlagLoaderListen.Value(args)
	if !found {
		listen = loraLoaderDefaultListen
	}
	_, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("the loader's --listen %q: %w", listen, err)
	}
	containerPort, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("the loader's --listen %q: %w", listen, err)
	}
	port, err := run.listen(int32(containerPort))
	if err != nil {
		return nil, err
	}
	return append(args, vllm.FlagLoaderListen.Name, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))), nil
}

// flagValues are the values of a flag that takes several (argparse's nargs="+"): the words after
// it up to the next flag.
func flagValues(words []string, flag string) []string {
	var out []string
	for i, w := range words {
		if w == flag {
			for _, v := range words[i+1:] {
				if strings.HasPrefix(v, "-") {
					break
				}
				out = append(out, v)
			}
		} else if v, ok := strings.CutPrefix(w, flag+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// loraModuleJSON is a vLLM --lora-modules value (name=path, or JSON) in the sim's JSON form.
func loraModuleJSON(adapter, model string) (string, error) {
	if strings.HasPrefix(adapter, "{") {
		return adapter, nil
	}
	name, path, ok := strings.Cut(adapter, "=")
	if !ok {
		return "", fmt.Errorf("vLLM's --lora-modules %q: neither name=path nor JSON", adapter)
	}
	data, err := json.Marshal(map[string]string{"name": name, "path": path, "base_model_name": model})
	return string(data), err
}
