// SPDX-License-Identifier: Apache-2.0

// Command fusioninfer renders InferenceService manifests (fusioninfer.io/v1alpha1) into the
// Kubernetes objects the pulumi-fusioninfer component would create, with no cluster and no Pulumi.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is stamped at build time with -ldflags "-X main.version=..."; a binary from
// `go install .../cmd/fusioninfer@vX` is not stamped, and reports the module version it was built
// from (buildVersion).
var version = "dev"

// buildVersion is the stamped version, else the version of the module the binary was installed
// from, else "dev".
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && version == "dev" && strings.HasPrefix(info.Main.Version, "v") {
		return strings.TrimPrefix(info.Main.Version, "v")
	}
	return version
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errReported means the error's message is already on stderr (a list of problems); runMain
// prints it nowhere else.
var errReported = errors.New("reported")

// runMain is the whole command: its exit status is 0 on success and 1 otherwise (status has its
// own: 2 not running yet, 3 failed), and it never fails
// silently: an error not yet reported is printed on stderr as one line with what to do.
func runMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var code exitCode
	if errors.As(err, &code) { // status: the report is printed, the code says the phase
		return int(code)
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintf(stderr, "fusioninfer: %s (see '%s --help')\n", oneLine(err.Error()), cmd.CommandPath())
	}
	return 1
}

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "fusioninfer",
		Short: "Render LLM inference services into Kubernetes objects",
		Long: `fusioninfer turns an InferenceService manifest (apiVersion: fusioninfer.io/v1alpha1) into the
Kubernetes objects that the pulumi-fusioninfer InferenceService component creates: one
LeaderWorkerSet per replica of every serving role and, when the service is gang scheduled
(multi-node or prefill/decode roles, or schedulerName volcano), one shared Volcano PodGroup.

It needs no cluster and no Pulumi engine. The output can be reviewed, diffed, or applied with
kubectl on a cluster that runs LeaderWorkerSet >= v0.7 and Volcano >= 1.14.

"fusioninfer plan" predicts, with Volcano's gang rules, which replicas a cluster of a given
size runs, before anything is deployed; "fusioninfer status" reads a deployed service from the
cluster and says what holds back each replica that does not run; "fusioninfer platform render"
prints what installs the cluster's prerequisites (docs/install.md).`,
		Example: `  fusioninfer render -f examples/manifests/story4-disaggregated-multinode.yaml
  fusioninfer render -f service.yaml --summary
  cat service.yaml | fusioninfer render -f - --namespace llm | kubectl apply --server-side -f -
  fusioninfer render -f service.yaml -o rendered/
  fusioninfer plan -f service.yaml --nodes 10,8,6 --gpus-per-node 8
  fusioninfer status -f service.yaml
  fusioninfer platform render | kubectl apply --server-side -f -`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRenderCommand(), newPlanCommand(), newStatusCommand(), newPlatformCommand())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	return root
}

// flagError is a flag's problem as one line that says what the flag takes, for pflag's words
// ("invalid argument "x" for "--timeout" flag: time: invalid duration "x""), which are Go's.
// runMain prints it with the command's --help to read, not the whole usage.
func flagError(err error) error {
	var invalid *pflag.InvalidValueError
	if !errors.As(err, &invalid) {
		return err
	}
	flag := invalid.GetFlag()
	switch flag.Value.Type() {
	case "bool":
		return fmt.Errorf("--%s %q: give true or false", flag.Name, invalid.GetValue())
	case "duration":
		return fmt.Errorf("--%s %q: give a duration such as 30s or 2m", flag.Name, invalid.GetValue())
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return fmt.Errorf("--%s %q: give a whole number", flag.Name, invalid.GetValue())
	}
	// The project's own flag values say what they take themselves.
	return fmt.Errorf("--%s %q: %w", flag.Name, invalid.GetValue(), errors.Unwrap(invalid))
}

// unknownSubcommand refuses any argument of a command group, with cobra's suggestions, as cobra
// does for the root (command.go, legacyArgs), which it does only for the root.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 { // cobra's default, set where it suggests (findSuggestions)
		cmd.SuggestionsMinimumDistance = 2
	}
	if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t") + "\n"
	}
	return errors.New(msg)
}

// oneLine folds a multi-line message (cobra's "Did you mean this?" suggestions) into one line.
func oneLine(msg string) string {
	msg = strings.Replace(strings.TrimSpace(msg), "\n\nDid you mean this?\n", ": did you mean ", 1)
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " or ")), " ")
}
