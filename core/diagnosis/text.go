// SPDX-License-Identifier: Apache-2.0

package diagnosis

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// phaseWords say a service's phase in plain words.
var phaseWords = map[Phase]string{Running: "Running", Progressing: "not running yet", Pending: "not running yet",
	Unknown: "not running yet", Failed: "failed", ScaledToZero: "scaled to zero"}

// Text is the report for a terminal: the service's phase and what holds it back, then one line per
// replica with its phase and first cause, then the fixes.
func (r *Report) Text() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "InferenceService %s (namespace %s): %s\n", r.Service, r.Namespace, phaseWords[r.Phase])
	for _, role := range r.Roles {
		if role.Phase != ScaledToZero {
			continue
		}
		idle := "no request has woken it yet"
		if role.IdleSince != nil {
			idle = "idle since " + role.IdleSince.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "  role %s: scaled to zero, %s; a request through the router wakes it\n", role.Name, idle)
	}
	for _, c := range r.Causes {
		fmt.Fprintf(&b, "  %s: %s: %s\n", c.Object, c.Reason, c.Message)
		if c.Fix != "" {
			fmt.Fprintf(&b, "    fix: %s\n", c.Fix)
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tREADY\tREPLICA\tPHASE\tCAUSE")
	fixes := map[string]bool{}
	var fixList []string
	for _, role := range r.Roles {
		for i, rep := range role.Replicas {
			name, ready := "", ""
			if i == 0 {
				name, ready = role.Name, fmt.Sprintf("%d/%d", role.ReadyReplicas, len(role.Replicas))
			}
			cause := "-"
			if c := rep.Cause; c != nil {
				cause = fmt.Sprintf("%s: %s", c.Object, c.Message)
				if c.Fix != "" && !fixes[c.Fix] {
					fixes[c.Fix] = true
					fixList = append(fixList, c.Fix)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, ready, rep.Name, rep.Phase, cause)
		}
	}
	tw.Flush()
	writeLoad(&b, r)
	writeAdapters(&b, r.Roles)
	for _, fix := range fixList {
		fmt.Fprintf(&b, "fix: %s\n", fix)
	}
	if r.Request != "" {
		fmt.Fprintf(&b, "send a request: %s\n", r.Request)
	}
	return b.String()
}

// ExitCode says the phase to a script: 0 Running, 2 not yet, 3 failed (1 is for errors).
func (r *Report) ExitCode() int {
	switch r.Phase {
	case Running, ScaledToZero: // a request wakes it
		return 0
	case Failed:
		return 3
	}
	return 2
}

// writeAdapters lists, for each pod that runs the LoRA loader, the adapters its server has loaded
// and each that failed with its cause, one line each; nothing when no pod runs a loader.
func writeAdapters(b *bytes.Buffer, roles []Role) {
	var pods []PodAdapters
	for _, role := range roles {
		for _, rep := range role.Replicas {
			pods = append(pods, rep.Adapters...)
		}
	}
	if len(pods) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tLORA ADAPTERS")
	for _, p := range pods {
		switch {
		case p.Unknown != "":
			fmt.Fprintf(tw, "%s\tnot known: %s\n", p.Pod, p.Unknown)
		case len(p.Loaded) == 0:
			fmt.Fprintf(tw, "%s\tloaded: none\n", p.Pod)
		default:
			fmt.Fprintf(tw, "%s\tloaded: %s\n", p.Pod, strings.Join(p.Loaded, ", "))
		}
		for _, f := range p.Failed {
			fmt.Fprintf(tw, "\tfailed: %s (%s): %s\n", f.Name, f.Path, f.Cause)
		}
	}
	tw.Flush()
}

// writeLoad lists each replica's load, from its servers' metrics, and where they were read;
// nothing when they were not.
func writeLoad(b *bytes.Buffer, r *Report) {
	if r.MetricsSource == "" {
		return
	}
	fmt.Fprintf(b, "load, from %s:\n", r.MetricsSource)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tREPLICA\tRUNNING\tWAITING\tKV-CACHE")
	for _, role := range r.Roles {
		for _, rep := range role.Replicas {
			switch l := rep.Load; {
			case l == nil:
			case l.Unknown != "":
				fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\tnot known: %s\n", role.Name, rep.Name, l.Unknown)
			default:
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", role.Name, rep.Name, gauge(l.RequestsRunning), gauge(l.RequestsWaiting), percent(l.KVCacheUsage))
			}
		}
	}
	tw.Flush()
}

// gauge is a count of requests as a number, an integer when it is one.
func gauge(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
