// Command argsgen writes the Go component's Args (components/inferenceservice/args_generated.go)
// from the one hand-written input model, components/api's InferenceServiceSpec and Role: the same
// fields, types and doc comments, except that a role's pod template is a Pulumi Input (it may hold
// other resources' outputs), and the conversions between the two. `make gen` runs it; a test fails
// when the checked-in file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"
)

const apiImport = "github.com/fusioninfer/pulumi-fusioninfer/components/api"

// templateType is the role's pod template in the Go component: a pulumi-kubernetes Input.
const templateType = "k8scorev1.PodTemplateSpecInput"

func main() {
	apiDir := flag.String("api", "../api", "the api package's folder")
	out := flag.String("out", "args_generated.go", "the file to write")
	flag.Parse()
	src, err := Generate(*apiDir)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// field is one field of an api struct, as it is written there.
type field struct {
	name, doc, typ string
}

// Generate is the source of args_generated.go for the api package in apiDir.
func Generate(apiDir string) ([]byte, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, apiDir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	pkg, ok := pkgs["api"]
	if !ok {
		return nil, fmt.Errorf("%s: no package api", apiDir)
	}
	g := &generator{fset: fset, local: map[string]bool{}, imports: map[string]string{}, used: map[string]bool{"k8scorev1": true, "api": true}}
	structs := map[string]*ast.StructType{}
	for _, file := range pkg.Files {
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			g.imports[name] = p
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				g.local[ts.Name.Name] = true
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
			}
		}
	}
	spec, role := structs["InferenceServiceSpec"], structs["Role"]
	if spec == nil || role == nil {
		return nil, fmt.Errorf("%s: InferenceServiceSpec and Role must be declared", apiDir)
	}
	specFields, err := g.fields(spec)
	if err != nil {
		return nil, err
	}
	roleFields, err := g.fields(role)
	if err != nil {
		return nil, err
	}
	return g.write(specFields, roleFields)
}

type generator struct {
	fset    *token.FileSet
	local   map[string]bool   // types declared in package api
	imports map[string]string // import name -> path, as the api package imports them
	used    map[string]bool   // import names the generated file needs
}

func (g *generator) fields(st *ast.StructType) ([]field, error) {
	var out []field
	for _, f := range st.Fields.List {
		if len(f.Names) != 1 {
			return nil, fmt.Errorf("api fields must be named one by one")
		}
		typ, err := g.qualify(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Names[0].Name, err)
		}
		out = append(out, field{name: f.Names[0].Name, doc: f.Doc.Text(), typ: typ})
	}
	return out, nil
}

// qualify prints a field's type as the inferenceservice package must write it: the api
// package's own types with "api.", other packages' as the api package imports them.
func (g *generator) qualify(expr ast.Expr) (string, error) {
	var err error
	expr = cloneQualified(expr, func(id *ast.Ident) ast.Expr {
		if g.local[id.Name] {
			return &ast.SelectorExpr{X: ast.NewIdent("api"), Sel: ast.NewIdent(id.Name)}
		}
		return id
	}, func(pkg string) {
		if _, ok := g.imports[pkg]; !ok {
			err = fmt.Errorf("unknown package %s", pkg)
		}
		g.used[pkg] = true
	})
	var buf bytes.Buffer
	if perr := printer.Fprint(&buf, g.fset, expr); perr != nil {
		return "", perr
	}
	return buf.String(), err
}

// cloneQualified rewrites the identifiers of a type expression that are not package selectors.
func cloneQualified(expr ast.Expr, ident func(*ast.Ident) ast.Expr, pkg func(string)) ast.Expr {
	switch e := expr.(type) {
	case *ast.Ident:
		return ident(e)
	case *ast.StarExpr:
		return &ast.StarExpr{X: cloneQualified(e.X, ident, pkg)}
	case *ast.ArrayType:
		return &ast.ArrayType{Elt: cloneQualified(e.Elt, ident, pkg)}
	case *ast.MapType:
		return &ast.MapType{Key: cloneQualified(e.Key, ident, pkg), Value: cloneQualified(e.Value, ident, pkg)}
	case *ast.SelectorExpr:
		pkg(e.X.(*ast.Ident).Name)
		return e
	default:
		return expr
	}
}

func (g *generator) write(specFields, roleFields []field) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by internal/argsgen from components/api (InferenceServiceSpec, Role). DO NOT EDIT.\n\n")
	p("package inferenceservice\n\nimport (\n")
	var names []string
	for name := range g.used {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := g.imports[name]
		switch name {
		case "api":
			path = apiImport
		case "k8scorev1":
			path = "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
		}
		if name == "corev1" && !g.usedOtherThanTemplate(specFields, roleFields, "corev1.") {
			continue
		}
		p("\t%s %q\n", name, path)
	}
	p(")\n\n")
	p("// Args describe one InferenceService: its name, namespace and labels, and every field of\n")
	p("// api.InferenceServiceSpec. The fields that shape the tree are plain values; each role's pod\n")
	p("// template is an Input and may hold outputs of other resources, unknown at preview.\n")
	p("type Args struct {\n")
	p("\t// ServiceName is the service's name (metadata.name); defaults to the component's name.\n\tServiceName string\n")
	p("\t// Namespace of every child; defaults to \"default\".\n\tNamespace string\n")
	p("\t// Labels are added to every child object.\n\tLabels map[string]string\n")
	for _, f := range specFields {
		typ := f.typ
		if f.name == "Roles" {
			typ = "[]RoleArgs"
		}
		p("%s\t%s %s\n", comment(f.doc), f.name, typ)
	}
	p("}\n\n// RoleArgs describe one role: every field of api.Role, with the pod template as an Input.\ntype RoleArgs struct {\n")
	for _, f := range roleFields {
		typ := f.typ
		if f.name == "Template" {
			typ = templateType
		}
		p("%s\t%s %s\n", comment(f.doc), f.name, typ)
	}
	p("}\n\n")
	// copies writes "Field: from.Field," for each field but the one each side holds its own way.
	copies := func(fields []field, except, from, indent string) {
		for _, f := range fields {
			if f.name != except {
				p("%s%s: %s.%s,\n", indent, f.name, from, f.name)
			}
		}
	}
	p("// spec is the InferenceServiceSpec the Args describe, without pod templates.\n")
	p("func (a *Args) spec() api.InferenceServiceSpec {\n\tout := api.InferenceServiceSpec{\n")
	copies(specFields, "Roles", "a", "\t\t")
	p("\t}\n\tfor i := range a.Roles {\n\t\tout.Roles = append(out.Roles, a.Roles[i].role())\n\t}\n\treturn out\n}\n\n")
	p("// role is the api.Role the RoleArgs describe, without its pod template.\n")
	p("func (r *RoleArgs) role() api.Role {\n\treturn api.Role{\n")
	copies(roleFields, "Template", "r", "\t\t")
	p("\t}\n}\n\n")
	p("// argsFromSpec are the Args of a spec, without pod templates.\n")
	p("func argsFromSpec(spec *api.InferenceServiceSpec) *Args {\n\tout := &Args{\n")
	copies(specFields, "Roles", "spec", "\t\t")
	p("\t}\n\tfor i := range spec.Roles {\n\t\tout.Roles = append(out.Roles, roleArgs(&spec.Roles[i]))\n\t}\n\treturn out\n}\n\n")
	p("// roleArgs are the RoleArgs of a role, without its pod template.\n")
	p("func roleArgs(r *api.Role) RoleArgs {\n\treturn RoleArgs{\n")
	copies(roleFields, "Template", "r", "\t\t")
	p("\t}\n}\n")
	return format.Source(b.Bytes())
}

// usedOtherThanTemplate reports whether a field other than the template needs the package.
func (g *generator) usedOtherThanTemplate(specFields, roleFields []field, prefix string) bool {
	for _, f := range append(append([]field{}, specFields...), roleFields...) {
		if f.name != "Template" && strings.Contains(f.typ, prefix) {
			return true
		}
	}
	return false
}

func comment(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(doc, "\n"), "\n") {
		if line == "" {
			b.WriteString("\t//\n")
			continue
		}
		b.WriteString("\t// " + line + "\n")
	}
	return b.String()
}
