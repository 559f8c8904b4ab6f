// SPDX-License-Identifier: Apache-2.0

// Package descriptions reads the doc comments of the Go types behind the provider's schema (the
// component's Args, the api package's nested structs, the component's outputs), so the schema
// describes every input and output in the words the Go code already uses. The provider cannot
// read source files at run time: `make gen` writes them to provider/descriptions.json, which the
// provider embeds, and a test fails when that file is stale.
package descriptions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/goparse"
)

// Sources are the packages, relative to the repository root, whose types the schema shows; a type
// name found in several is described by the first.
var Sources = []string{"provider", "components/inferenceservice", "api", "components/platform", "core/platform"}

// Table is, per Go type name, per pulumi property name, the field's doc comment.
type Table map[string]map[string]string

// Collect reads the doc comments of every struct field with a `pulumi` tag in the packages.
func Collect(root string) (Table, error) {
	table := Table{}
	for _, dir := range Sources {
		fset := token.NewFileSet()
		files, err := goparse.Package(fset, root+"/"+dir, parser.ParseComments, nil)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			collectFile(file, table)
		}
	}
	return table, nil
}

func collectFile(file *ast.File, table Table) {
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := spec.Type.(*ast.StructType)
		if !ok {
			return true
		}
		if _, seen := table[spec.Name.Name]; seen {
			return true
		}
		fields := map[string]string{}
		for _, f := range st.Fields.List {
			if f.Tag == nil {
				continue
			}
			tag, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				continue
			}
			prop, _, _ := strings.Cut(reflect.StructTag(tag).Get("pulumi"), ",")
			if prop == "" {
				continue
			}
			doc := text(f.Doc)
			if doc == "" {
				doc = text(f.Comment)
			}
			if doc != "" && len(f.Names) == 1 {
				fields[prop] = forSDKUsers(f.Names[0].Name, doc)
			}
		}
		if len(fields) > 0 {
			table[spec.Name.Name] = fields
		}
		return true
	})
}

// forSDKUsers is a field's doc comment as a TypeScript or Python user reads it, beside the
// property's own name: without the Go name it starts with, as Go's doc comments do. "Replicas is
// the number ..." is "The number ..."; "Multinode spreads ..." is "Spreads ..."; "Status is, per
// role, ..." is "Per role, ..."; "Install: whether ..." is "Whether ..."; "Namespace of every
// child" is "The namespace of every child". The comments are written so that what follows their
// Go name reads as a sentence (TestDescriptionsSpeakToSDKUsers holds the schema to it).
func forSDKUsers(goName, doc string) string {
	rest, ok := strings.CutPrefix(doc, goName+" ")
	switch {
	case strings.HasPrefix(doc, goName+": "):
		rest = strings.TrimPrefix(doc, goName+": ")
	case !ok:
		return doc
	case strings.HasPrefix(rest, "of "):
		if strings.IndexFunc(goName[1:], unicode.IsUpper) >= 0 {
			return doc // not one word: say what the field is instead ("StorageClassName is ...")
		}
		rest = "the " + strings.ToLower(goName) + " " + rest
	default:
		for _, verb := range []string{"is, ", "are, ", "is ", "are "} {
			if after, found := strings.CutPrefix(rest, verb); found {
				rest = after
				break
			}
		}
	}
	if rest == "" {
		return doc
	}
	r, size := utf8.DecodeRuneInString(rest)
	return string(unicode.ToUpper(r)) + rest[size:]
}

// text is a comment as one paragraph.
func text(group *ast.CommentGroup) string {
	if group == nil {
		return ""
	}
	return strings.Join(strings.Fields(group.Text()), " ")
}
