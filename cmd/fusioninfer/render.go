// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

type renderOptions struct {
	files     []string
	namespace string
	outputDir string
	replace   bool
	summary   bool
}

// errInvalidInput means the input was refused; its problems were already printed.
var errInvalidInput = fmt.Errorf("invalid input: %w", errReported)

func newRenderCommand() *cobra.Command {
	var opts renderOptions
	cmd := &cobra.Command{
		Use:   "render [-f] FILE [FILE ...]",
		Short: "Print the Kubernetes objects of InferenceService manifests as YAML",
		Long: `render reads InferenceService manifests (several documents per file are allowed, "-" reads
stdin), checks every rule, and prints the objects in apply order as multi-document YAML. Files
are given with -f or as arguments, so a shell glob works either way (render -f a*.yaml).

On bad input it prints every problem with its field path on stderr, prints nothing on stdout,
and exits non-zero.`,
		Args: cobra.ArbitraryArgs, // files, as kubectl's -f takes one: `-f a*.yaml` expands to -f a1.yaml a2.yaml
		RunE: func(cmd *cobra.Command, files []string) error {
			opts.files = append(opts.files, files...)
			return runRender(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.files, "filename", "f", nil, `manifest file to render ("-" for stdin); repeatable`)
	cmd.Flags().StringVarP(&opts.namespace, "namespace", "n", "", "namespace for services that name none (default \"default\")")
	cmd.Flags().StringVarP(&opts.outputDir, "output-dir", "o", "", "write one file per object into this directory instead of stdout")
	cmd.Flags().BoolVar(&opts.replace, "replace", false, "with -o: delete the object files of an earlier render in the directory first")
	cmd.Flags().BoolVar(&opts.summary, "summary", false, "print a summary of roles, pods, GPUs and gang keys (as YAML comments) before the objects (with -o: on stdout)")
	return cmd
}

func runRender(stdin io.Reader, stdout, stderr io.Writer, opts renderOptions) error {
	if err := checkReplace(opts.outputDir, opts.replace); err != nil {
		return err
	}
	trees, problems, err := loadTrees(stdin, opts)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		fmt.Fprintf(stderr, "%s; nothing rendered\n", plural(len(problems), "problem"))
		return errInvalidInput
	}
	for _, tree := range trees {
		for _, w := range tree.Warnings() {
			fmt.Fprintf(stderr, "warning: InferenceService %q: %s\n", tree.Service.Name, w)
		}
	}
	if opts.outputDir != "" {
		if opts.summary {
			for _, tree := range trees {
				writeSummary(stdout, render.Summarize(tree))
			}
		}
		return writeObjectFiles(opts.outputDir, opts.replace, treeObjects(trees), stdout)
	}
	var out bytes.Buffer
	for _, tree := range trees {
		if opts.summary {
			writeSummary(&out, render.Summarize(tree))
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
// trees or every problem found (in file and line order), never a mix. Services and objects are
// unique across everything rendered together (render.Duplicates). A file that cannot be read is an error of its own: nothing is checked after it.
func loadTrees(stdin io.Reader, opts renderOptions) ([]*render.Tree, []string, error) {
	if len(opts.files) == 0 {
		return nil, nil, errors.New("no manifest: give its file (render -f FILE, or render FILE ...), or - for stdin")
	}
	if err := checkNamespaceFlag(opts.namespace); err != nil {
		return nil, nil, err
	}
	var trees []*render.Tree
	var sources []render.Source // where each tree's service is
	var problems []string
	var given []string
	for _, file := range opts.files {
		if earlier, ok := sameInput(given, file); ok {
			also := ""
			if earlier != file {
				also = " (also as " + earlier + ")"
			}
			problems = append(problems, fmt.Sprintf("%s: given twice with -f%s; its services would be rendered twice", file, also))
			continue
		}
		given = append(given, file)
		data, err := readInput(stdin, file)
		if err != nil {
			return nil, nil, err
		}
		fileTrees, fileSources, fileProblems := render.LoadManifest(file, data, namespaceFlag(opts.namespace))
		trees = append(trees, fileTrees...)
		sources = append(sources, fileSources...)
		problems = append(problems, fileProblems...)
	}
	problems = append(problems, render.Duplicates(trees, sources)...)
	if len(problems) == 0 && len(trees) == 0 {
		problems = append(problems, "no InferenceService found in "+strings.Join(opts.files, ", "))
	}
	return trees, problems, nil
}

// checkNamespaceFlag refuses a --namespace no namespace can have, as the flag's problem (not at a
// line of each manifest). The verdict is apimachinery's (namespaces are RFC 1123 labels:
// k8s.io/apimachinery/pkg/api/validation ValidateNamespaceName), the words ours.
func checkNamespaceFlag(namespace string) error {
	if namespace == "" || len(validation.IsDNS1123Label(namespace)) == 0 {
		return nil
	}
	return fmt.Errorf("--namespace %q: not a namespace name: at most %d lowercase letters, digits and '-', starting and ending with a letter or digit",
		namespace, validation.DNS1123LabelMaxLength)
}

// checkReplace: --replace deletes an earlier render's files in -o DIR, and means nothing without it.
func checkReplace(outputDir string, replace bool) error {
	if replace && outputDir == "" {
		return errors.New("--replace deletes the files of an earlier render in -o DIR: give -o DIR too")
	}
	return nil
}

// namespaceFlag: -n names the namespace of services that name none, and contradicts no manifest.
func namespaceFlag(namespace string) func(*api.InferenceService) *field.Error {
	if namespace == "" {
		return nil
	}
	return func(svc *api.InferenceService) *field.Error {
		if svc.Namespace != "" && svc.Namespace != namespace {
			return field.Invalid(field.NewPath("metadata", "namespace"), svc.Namespace, fmt.Sprintf("does not match --namespace %q", namespace))
		}
		svc.Namespace = namespace
		return nil
	}
}

// sameInput returns the earlier -f that names the same input as file: the same file by identity
// (an absolute path or a symlink is no new file), or stdin twice.
func sameInput(given []string, file string) (string, bool) {
	info, statErr := os.Stat(file)
	for _, earlier := range given {
		if earlier == "-" || file == "-" {
			if earlier == file {
				return earlier, true
			}
			continue
		}
		if filepath.Clean(earlier) == filepath.Clean(file) {
			return earlier, true
		}
		if statErr != nil {
			continue // unreadable: readInput says why
		}
		if earlierInfo, err := os.Stat(earlier); err == nil && os.SameFile(earlierInfo, info) {
			return earlier, true
		}
	}
	return "", false
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

// objectFileName is the name of an object's file in an output directory: its apply position,
// so that `kubectl apply -f DIR` applies them in order, then what it is.
var objectFileName = regexp.MustCompile(`^[0-9]{4}-.+\.yaml$`)

// objectFile is an object to write to a file of its own.
type objectFile struct {
	namespace, kind, name string
	yaml                  func() ([]byte, error)
}

// treeObjects are the objects of the trees, in apply order.
func treeObjects(trees []*render.Tree) []objectFile {
	var out []objectFile
	for _, tree := range trees {
		for i := range tree.Objects {
			obj := &tree.Objects[i]
			out = append(out, objectFile{obj.Namespace, obj.Kind, obj.Name, obj.YAML})
		}
	}
	return out
}

// writeObjectFiles writes each object to its own file in dir. The directory must be new or
// empty: an earlier render's files left beside the new ones would be applied too. With replace,
// the object files of an earlier render are deleted first (and nothing else is).
func writeObjectFiles(dir string, replace bool, objects []objectFile, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	// Decide before deleting anything: a refused command leaves the directory as it was.
	var stale, others []string
	for _, e := range entries {
		if replace && e.Type().IsRegular() && objectFileName.MatchString(e.Name()) {
			stale = append(stale, e.Name())
			continue
		}
		others = append(others, e.Name())
	}
	switch {
	case len(others) > 0 && replace:
		return fmt.Errorf("-o %s holds files an earlier render did not write (%s); give an empty directory", dir, strings.Join(others, ", "))
	case len(others) > 0:
		return fmt.Errorf("-o %s is not empty (%d files): `kubectl apply -f %s` would apply an earlier render's objects too; give --replace to delete them first, or an empty directory", dir, len(others), dir)
	}
	for _, name := range stale {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for n, obj := range objects {
		doc, err := obj.yaml()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%04d-%s-%s-%s.yaml", n, obj.namespace, strings.ToLower(obj.kind), obj.name)
		if obj.namespace == "" { // cluster-scoped
			name = fmt.Sprintf("%04d-%s-%s.yaml", n, strings.ToLower(obj.kind), obj.name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), doc, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s to %s\n", plural(len(objects), "object"), dir)
	return nil
}
