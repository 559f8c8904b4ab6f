package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
)

type renderOptions struct {
	files     []string
	namespace string
	outputDir string
	summary   bool
}

// errInvalidInput means the input was refused; its problems were already printed.
var errInvalidInput = fmt.Errorf("invalid input: %w", errReported)

func newRenderCommand() *cobra.Command {
	var opts renderOptions
	cmd := &cobra.Command{
		Use:   "render -f FILE",
		Short: "Print the Kubernetes objects of InferenceService manifests as YAML",
		Long: `render reads InferenceService manifests (several documents per file are allowed, "-" reads
stdin), checks every rule, and prints the objects in apply order as multi-document YAML.

On bad input it prints every problem with its field path on stderr, prints nothing on stdout,
and exits non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.files, "filename", "f", nil, `manifest file to render ("-" for stdin); repeatable`)
	cmd.Flags().StringVarP(&opts.namespace, "namespace", "n", "", "namespace for services that name none (default \"default\")")
	cmd.Flags().StringVarP(&opts.outputDir, "output-dir", "o", "", "write one file per object into this directory instead of stdout")
	cmd.Flags().BoolVar(&opts.summary, "summary", false, "print a summary of roles, pods, GPUs and gang keys (as YAML comments) before the objects")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runRender(stdin io.Reader, stdout, stderr io.Writer, opts renderOptions) error {
	trees, problems, err := loadTrees(stdin, opts)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		fmt.Fprintf(stderr, "%d problem(s); nothing rendered\n", len(problems))
		return errInvalidInput
	}
	if opts.outputDir != "" {
		return writeObjectFiles(opts.outputDir, trees, stdout)
	}
	var out bytes.Buffer
	for _, tree := range trees {
		if opts.summary {
			writeSummary(&out, topology.Summarize(tree))
		}
		doc, err := tree.YAML()
		if err != nil {
			return err
		}
		out.Write(doc)
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

// loadTrees decodes, validates and builds every service of every input; it returns either all
// trees or every problem found (in file and line order), never a mix.
// A file that cannot be read is an error of its own: nothing is checked after it.
func loadTrees(stdin io.Reader, opts renderOptions) ([]*topology.Tree, []string, error) {
	var trees []*topology.Tree
	var problems []string
	for _, file := range opts.files {
		data, err := readInput(stdin, file)
		if err != nil {
			return nil, nil, err
		}
		fileTrees, fileProblems := loadFile(file, data, opts.namespace)
		trees = append(trees, fileTrees...)
		problems = append(problems, fileProblems...)
	}
	if len(problems) == 0 && len(trees) == 0 {
		problems = append(problems, "no InferenceService found in "+strings.Join(opts.files, ", "))
	}
	return trees, problems, nil
}

// loadFile builds the services of one file; its problems come in line order.
func loadFile(file string, data []byte, namespace string) ([]*topology.Tree, []string) {
	type problem struct {
		line int
		text string
	}
	var trees []*topology.Tree
	var problems []problem
	docs, errs := api.Decode(data)
	for _, err := range errs {
		line := 0
		var decodeErr *api.DecodeError
		if errors.As(err, &decodeErr) {
			line = decodeErr.Line
		}
		problems = append(problems, problem{line, fmt.Sprintf("%s: %v", file, err)})
	}
	for _, doc := range docs {
		svc := doc.Service
		where := fmt.Sprintf("%s:%d: InferenceService %q", file, doc.Line, svc.Name)
		if namespace != "" {
			if svc.Namespace != "" && svc.Namespace != namespace {
				problems = append(problems, problem{doc.Line, fmt.Sprintf(
					"%s: metadata.namespace: Invalid value: %q: does not match --namespace %q", where, svc.Namespace, namespace)})
				continue
			}
			svc.Namespace = namespace
		}
		tree, verrs := topology.Build(svc)
		for _, e := range verrs {
			problems = append(problems, problem{doc.Line, fmt.Sprintf("%s: %v", where, e)})
		}
		if tree != nil {
			trees = append(trees, tree)
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].line < problems[j].line })
	texts := make([]string, len(problems))
	for i, p := range problems {
		texts[i] = p.text
	}
	return trees, texts
}

func readInput(stdin io.Reader, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read the manifest: %w; give -f a readable InferenceService file, or - for stdin", err)
	}
	return data, nil
}

// writeObjectFiles writes each object to its own file, prefixed with its apply position so that
// `kubectl apply -f DIR` applies them in order.
func writeObjectFiles(dir string, trees []*topology.Tree, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := 0
	for _, tree := range trees {
		for i := range tree.Objects {
			obj := &tree.Objects[i]
			doc, err := obj.YAML()
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%04d-%s-%s-%s.yaml", n, obj.Namespace, strings.ToLower(obj.Kind), obj.Name)
			if err := os.WriteFile(filepath.Join(dir, name), doc, 0o644); err != nil {
				return err
			}
			n++
		}
	}
	fmt.Fprintf(stdout, "wrote %d objects to %s\n", n, dir)
	return nil
}
