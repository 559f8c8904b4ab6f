// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

type platformOptions struct {
	file      string
	outputDir string
	replace   bool
}

func newPlatformCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "platform",
		Short: "The cluster's prerequisites: LWS, Volcano, the Inference Extension's CRDs, KEDA, PodMonitor",
		// Runnable, so that cobra checks its arguments: a group without RunE prints its help and
		// exits 0 for a mistyped subcommand (cobra's execute returns flag.ErrHelp first).
		Args: unknownSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var opts platformOptions
	render := &cobra.Command{
		Use:   "render [-f SPEC] [-o DIR]",
		Short: "Print the objects that install the cluster's prerequisites as YAML",
		Long: `render prints the objects of the Platform component, in apply order, as multi-document YAML:
LeaderWorkerSet (its own gang scheduling off: the service's PodGroup gangs the pods), Volcano
with the scheduler configuration the gang rules need, the Gateway API Inference Extension's
InferencePool, InferenceObjective and InferenceModelRewrite CRDs (which the Endpoint Picker
reads), KEDA and prometheus-operator's PodMonitor CRD, from their upstream release manifests:
  ` + strings.Join(platform.Versions(), "\n  ") + `

A spec file (-f) says which parts to install, Volcano's scheduler configuration, and whether
the controllers' Deployments are rendered (controllers: false); without one, everything is.
docs/install.md installs a cluster with it.`,
		Example: `  fusioninfer platform render | kubectl apply --server-side -f -
  fusioninfer platform render -f platform.yaml -o platform/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlatformRender(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	render.Flags().StringVarP(&opts.file, "filename", "f", "", `a Platform spec ("-" for stdin); default: every part`)
	render.Flags().StringVarP(&opts.outputDir, "output-dir", "o", "", "write one file per object into this directory instead of stdout")
	render.Flags().BoolVar(&opts.replace, "replace", false, "with -o: delete the object files of an earlier render in the directory first")
	cmd.AddCommand(render)
	return cmd
}

func runPlatformRender(stdin io.Reader, stdout, stderr io.Writer, opts platformOptions) error {
	if err := checkReplace(opts.outputDir, opts.replace); err != nil {
		return err
	}
	spec := &platform.Spec{}
	var lines api.FileLines
	if opts.file != "" {
		data, err := readInput(stdin, opts.file)
		if err != nil {
			return err
		}
		if spec, lines, err = platform.DecodeFile(opts.file, data); err != nil && spec == nil {
			return printFileProblems(stderr, err)
		}
	}
	if err := lines.Error(platform.Validate(spec)); err != nil {
		return printFileProblems(stderr, err)
	}
	objects, err := platform.Render(spec)
	if err != nil {
		return err
	}
	if opts.outputDir != "" {
		files := make([]objectFile, len(objects))
		for i, o := range objects {
			files[i] = objectFile{o.Object.GetNamespace(), o.Object.GetKind(), o.Object.GetName(), func() ([]byte, error) {
				return yaml.Marshal(o.Object.Object)
			}}
		}
		return writeObjectFiles(opts.outputDir, opts.replace, files, stdout)
	}
	doc, err := platform.YAML(objects)
	if err != nil {
		return err
	}
	_, err = stdout.Write(doc)
	return err
}

// printFileProblems prints a file's problems one a line, "FILE:LINE: ...", as render prints a
// manifest's.
func printFileProblems(stderr io.Writer, err error) error {
	var fileErr *api.FileError
	if !errors.As(err, &fileErr) {
		return err
	}
	for _, line := range fileErr.Lines() {
		fmt.Fprintln(stderr, line)
	}
	return errInvalidInput
}
