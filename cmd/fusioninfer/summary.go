// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// maxTaskNamesShown keeps the summary to one screen for services with many replicas.
const maxTaskNamesShown = 4

// writeSummary prints a one-screen summary as YAML comment lines, so the output stays valid YAML.
func writeSummary(w io.Writer, s render.Summary) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "InferenceService %s (namespace %s)\n", s.Service, s.Namespace)
	tw := tabwriter.NewWriter(&body, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ROLE\tTYPE\tREPLICAS\tNODES/REPLICA\tPODS\tGPUS/POD\tGPUS\tGANG KEYS")
	for _, r := range s.Roles {
		replicas := fmt.Sprint(r.Replicas)
		if r.MaxReplicas > r.Replicas {
			replicas = fmt.Sprintf("%d (autoscaled to %d)", r.Replicas, r.MaxReplicas)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Name, r.ComponentType, replicas, r.NodesPerRep,
			r.Pods, r.GPUsPerPod, r.GPUs, taskNames(r.TaskNames))
	}
	fmt.Fprintf(tw, "  total\t\t\t\t%d\t\t%d\t\n", s.Pods, s.GPUs)
	tw.Flush()
	if s.Gang {
		var mins []string
		for _, r := range s.Roles {
			mins = append(mins, fmt.Sprintf("%s %dx%d", r.Name, r.MinReplicas, r.NodesPerRep))
		}
		fmt.Fprintf(&body, "gang: Volcano PodGroup %s, mode %s, minMember %d (%s), minimal set %s\n",
			s.PodGroup, s.GangMode, s.MinMember, strings.Join(mins, " + "), plural(s.MinimalGPUs, "GPU"))
	} else {
		body.WriteString("gang: off (default scheduler; single-node, monolithic)\n")
	}
	var ranks []string
	for _, r := range s.Roles {
		if r.Ranks > 0 {
			expert := ""
			if r.Expert {
				expert = ", expert parallel"
			}
			ranks = append(ranks, fmt.Sprintf("%s %d a replica (%d a pod of %s, %s a rank%s)",
				r.Name, r.Ranks, r.LocalRanks, plural(r.GPUsPerPod, "GPU"), plural(r.RankGPUs, "GPU"), expert))
		}
	}
	if len(ranks) > 0 {
		fmt.Fprintf(&body, "ranks: %s\n", strings.Join(ranks, "; "))
	}
	if r := s.Router; r != nil {
		ports := fmt.Sprintf("port %d", r.PoolPort)
		if r.PoolPorts > 1 {
			ports = fmt.Sprintf("ports %d-%d, one a rank", r.PoolPort, r.PoolPort+r.PoolPorts-1)
		}
		entrance := "HTTPRoute " + r.HTTPRoute
		if r.Service != "" {
			entrance = fmt.Sprintf("Service %s:%d (standalone proxy)", r.Service, r.ServicePort)
		}
		fmt.Fprintf(&body, "router: %s -> InferencePool %s (%s, %s) -> Endpoint Picker %s (%s, strategy %s)\n",
			entrance, r.Pool, r.PoolAPIVersion, ports, r.EndpointPicker, r.Image, r.Strategy)
		if r.Request != "" {
			fmt.Fprintf(&body, "send a request: %s\n", r.Request)
		}
	}
	for _, m := range s.Models {
		fmt.Fprintf(&body, "model: %s\n", render.DescribeModel(m))
	}
	fmt.Fprintf(&body, "rollout: %s\n", render.DescribeRollout(s.Rollout))
	kinds := make([]string, 0, len(s.Objects))
	for k := range s.Objects {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", s.Objects[k], k))
	}
	fmt.Fprintf(&body, "objects: %s\n", strings.Join(parts, ", "))
	for _, line := range strings.Split(strings.TrimRight(body.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight("# "+line, " "))
	}
}

func taskNames(names []string) string {
	switch {
	case len(names) == 0:
		return "-"
	case len(names) <= maxTaskNamesShown:
		return strings.Join(names, ",")
	default:
		return fmt.Sprintf("%s,%s ... %s (%d)", names[0], names[1], names[len(names)-1], len(names))
	}
}

// plural is a count and its noun: "1 GPU", "2 GPUs".
func plural[N ~int | ~int32 | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
