// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/observe"
)

type statusOptions struct {
	files                   []string
	name, namespace         string
	output                  string
	kubeconfig, kubeContext string
	timeout                 time.Duration
	// prometheus is the URL of a Prometheus that scrapes the service's PodMonitors: the load is
	// read from it, else from the pods' own /metrics.
	prometheus string
}

// exitCode ends the command with a status other than 0 or 1, its message already printed.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newStatusCommand() *cobra.Command {
	var opts statusOptions
	cmd := &cobra.Command{
		Use:   "status (-f FILE | --name NAME) [-n NAMESPACE] [-o text|json]",
		Short: "Say whether a deployed service runs, and what holds back each replica that does not",
		Long: `status reads the cluster (the kubeconfig kubectl uses) and prints, per role and replica, the
phase and the first cause that holds it back, with the object to look at and a fix: a gang Volcano
cannot place (the PodGroup's condition and events), pods pending, crashing, killed or unable to pull
their image (the container's last message), the model's download Job, an Endpoint Picker not
available, an HTTPRoute no Gateway accepted. For a model with LoRA adapters it lists, per server pod,
the adapters loaded and each that failed with its cause, asked of the pod's loader through the API
server's pod proxy. Per replica it shows the load: requests running and waiting and the KV-cache
use, from vLLM's gauges, read from the Prometheus --prometheus names (one that scrapes the service's
PodMonitors), else from each server pod's own /metrics through the API server's pod proxy.

With -f it knows the replicas the spec asks for, also those not created yet; with --name it reports
what it finds. It reads; it changes nothing.

Exit status: 0 Running, 2 not running yet, 3 failed (waiting will not help), 1 an error.`,
		Example: `  fusioninfer status -f examples/manifests/story4-disaggregated-multinode.yaml
  fusioninfer status --name deepseek-r1-disagg -n llm -o json
  fusioninfer status -f llama-router.yaml --prometheus http://localhost:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.files, "filename", "f", nil, `the service's manifest ("-" for stdin)`)
	cmd.Flags().StringVar(&opts.name, "name", "", "the service's name, without a manifest")
	cmd.Flags().StringVarP(&opts.namespace, "namespace", "n", "", "its namespace (default: the manifest's, else default; with --name, the kubeconfig context's)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig file (default: as kubectl finds it)")
	cmd.Flags().StringVar(&opts.kubeContext, "context", "", "kubeconfig context")
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 30*time.Second, "how long to wait for the API server")
	cmd.Flags().StringVar(&opts.prometheus, "prometheus", "", "URL of a Prometheus that scrapes the service's PodMonitors, to read the load from (default: the pods' /metrics)")
	return cmd
}

// statusError is what status prints on stdout under -o json when it cannot report: the error,
// and the manifest's problems when it was refused, so that a tool reading stdout gets JSON either
// way.
type statusError struct {
	Error    string   `json:"error"`
	Problems []string `json:"problems,omitempty"`
}

// inputProblems are a manifest's problems, each printed on its own line.
type inputProblems []string

func (p inputProblems) Error() string { return plural(len(p), "problem") + " in the manifest" }

func runStatus(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, opts statusOptions) error {
	if opts.output != "text" && opts.output != "json" {
		return fmt.Errorf("-o %q: give text or json", opts.output)
	}
	if opts.timeout <= 0 { // a context that is already over: every request would fail at once
		return fmt.Errorf("--timeout %s: give a duration above zero such as 30s or 2m", opts.timeout)
	}
	err := reportStatus(ctx, stdin, stdout, opts)
	var code exitCode
	var problems inputProblems
	switch {
	case err == nil || errors.As(err, &code):
		return err
	case opts.output == "json":
		report := statusError{Error: oneLine(err.Error())}
		if errors.As(err, &problems) {
			report.Problems = problems
		}
		if encErr := writeJSON(stdout, report); encErr != nil {
			return encErr
		}
		fmt.Fprintf(stderr, "fusioninfer: %s\n", report.Error)
		return errReported
	case errors.As(err, &problems):
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return errInvalidInput
	}
	return err
}

// reportStatus prints the status of every service, and returns the worst exit code.
func reportStatus(ctx context.Context, stdin io.Reader, stdout io.Writer, opts statusOptions) error {
	if opts.prometheus != "" {
		if u, err := url.Parse(opts.prometheus); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--prometheus %q: give the Prometheus' URL, such as http://localhost:9090", opts.prometheus)
		}
	}
	services, err := statusTargets(stdin, opts)
	if err != nil {
		return err
	}
	clients, err := observe.NewClients(opts.kubeconfig, opts.kubeContext, opts.timeout)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	worst := 0
	var reports []*diagnosis.Report
	for _, target := range services {
		if target.namespace == "" { // by name, without --namespace: the context's, as kubectl reads
			target.namespace = clients.Namespace
		}
		observed, err := clients.Service(ctx, target.name, target.namespace, target.svc)
		if err != nil {
			return err
		}
		if opts.prometheus != "" {
			observed.Metrics = observe.PrometheusMetrics(ctx, http.DefaultClient, opts.prometheus, target.namespace, target.name)
		} else {
			clients.ServerMetrics(ctx, observed, target.svc)
		}
		report := diagnosis.Diagnose(target.name, target.namespace, target.svc, observed)
		report.Request = target.request
		reports = append(reports, report)
		worst = max(worst, report.ExitCode())
	}
	if opts.output == "json" {
		if len(reports) == 1 {
			err = writeJSON(stdout, reports[0])
		} else {
			err = writeJSON(stdout, reports)
		}
		if err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			fmt.Fprint(stdout, r.Text())
		}
	}
	if worst != 0 {
		return exitCode(worst)
	}
	return nil
}

// writeJSON writes v indented, as people and tools read it: not escaped for HTML (">=" stays
// ">=", not "\u003e=").
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// statusTarget is one service to diagnose; svc is nil without a manifest, and namespace empty
// for the kubeconfig context's (a name without --namespace). A manifest's service without a
// namespace is in "default", where render and the component put it.
type statusTarget struct {
	name, namespace string
	svc             *api.InferenceService
	request         string // where to send requests, with a manifest (render.RouterSummary.Request)
}

func statusTargets(stdin io.Reader, opts statusOptions) ([]statusTarget, error) {
	switch {
	case len(opts.files) > 0 && opts.name != "":
		return nil, errors.New("give -f FILE or --name NAME, not both")
	case opts.name != "":
		if err := checkNamespaceFlag(opts.namespace); err != nil {
			return nil, err
		}
		return []statusTarget{{name: opts.name, namespace: opts.namespace}}, nil
	case len(opts.files) == 0:
		return nil, errors.New("give -f FILE (the service's manifest) or --name NAME")
	}
	trees, problems, err := loadTrees(stdin, renderOptions{files: opts.files, namespace: opts.namespace})
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, inputProblems(problems)
	}
	var out []statusTarget
	for _, tree := range trees {
		target := statusTarget{name: tree.Service.Name, namespace: tree.Service.Namespace, svc: tree.Service}
		if router := render.Summarize(tree).Router; router != nil {
			target.request = router.Request
		}
		out = append(out, target)
	}
	return out, nil
}
