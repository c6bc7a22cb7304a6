package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
	"github.com/spf13/cobra/doc"
	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// The reference pages under docs/reference are generated: the CLI's from
// the cobra commands, the scenario file's from its Go types and their
// comments, the CRDs' from their OpenAPI schemas. `go generate
// ./cmd/shoal` (go test -run TestReferenceIsCurrent . -update) writes them;
// the test fails while they differ from what the code would generate.
//
//go:generate go test -run TestReferenceIsCurrent . -update

// referenceDir is where the reference pages live, seen from this package.
var referenceDir = filepath.Join(repoRoot, "docs", "reference")

func TestReferenceIsCurrent(t *testing.T) {
	pages := map[string][]byte{}
	for name, b := range cliReference(t) {
		pages[filepath.Join("cli", name)] = b
	}
	pages["scenario.md"] = scenarioReference(t)
	pages["crds.md"] = crdReference(t)
	var policies bytes.Buffer
	if err := writePoliciesMarkdown(&policies, policy.Kinds()); err != nil {
		t.Fatal(err)
	}
	pages["policies.md"] = policies.Bytes()
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		path := filepath.Join(referenceDir, name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, pages[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: run go generate ./cmd/shoal", err)
			continue
		}
		if !bytes.Equal(got, pages[name]) {
			t.Errorf("docs/reference/%s is not what the code generates: run go generate ./cmd/shoal", name)
		}
	}
	// A page of a command that is gone is stale too.
	old, _ := filepath.Glob(filepath.Join(referenceDir, "cli", "*.md"))
	for _, path := range old {
		name, _ := filepath.Rel(referenceDir, path)
		if _, ok := pages[name]; !ok {
			if *update {
				os.Remove(path)
				continue
			}
			t.Errorf("docs/reference/%s documents no command: run go generate ./cmd/shoal", name)
		}
	}
}

// cliReference is one Markdown page per command (cobra/doc), by file name.
func cliReference(t *testing.T) map[string][]byte {
	t.Helper()
	root := (&cli{}).root()
	root.DisableAutoGenTag = true
	dir := t.TempDir()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	pages := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = b
	}
	if len(pages) < 20 {
		t.Fatalf("cobra/doc wrote %d pages", len(pages))
	}
	return pages
}

// scenarioReference is the scenario file's reference: one table per type
// reachable from scenario.Scenario, every field with its YAML name, its
// type and its doc comment. A field without a comment fails the test.
func scenarioReference(t *testing.T) []byte {
	t.Helper()
	g := &typeDoc{t: t, comments: map[string]map[string]string{}, typeComments: map[string]string{}, done: map[reflect.Type]bool{}}
	g.queue = []reflect.Type{reflect.TypeFor[scenario.Scenario]()}
	var b bytes.Buffer
	b.WriteString(`# Scenario file reference

<!-- Generated from the Go types of the scenario file and their comments by
'go generate ./cmd/shoal'. Do not edit: edit the comments in the code. -->

A scenario file is YAML. It is decoded strictly: an unknown field is an error
that names it, and every validation error names the field's path and its bad
value (` + "`sources[1].arrivals.rate: must be > 0`" + `). A field left out takes its
default. [Write a scenario](../guide/scenarios.md) shows how the parts fit
together; ` + "`shoal scenarios dump NAME`" + ` prints any embedded scenario, with its
comments, to start from.

Types: a *duration* is a Go duration (` + "`500ms`, `2m`, `1h30m`" + `); a *number* may
be fractional; *list of X* is a YAML sequence; *map of name to X* a mapping.

`)
	for len(g.queue) > 0 {
		typ := g.queue[0]
		g.queue = g.queue[1:]
		g.section(&b, typ)
	}
	return b.Bytes()
}

// typeDoc writes the reference of a tree of Go types.
type typeDoc struct {
	t            *testing.T
	comments     map[string]map[string]string // package path -> "Type.Field" -> comment
	typeComments map[string]string            // "pkg.Type" -> comment
	queue        []reflect.Type
	done         map[reflect.Type]bool
}

// anchorOf is the heading anchor of a type's section.
func anchorOf(typ reflect.Type) string { return strings.ToLower(typ.Name()) }

// title is a type's section heading: the top level is "Scenario".
func (g *typeDoc) section(b *bytes.Buffer, typ reflect.Type) {
	fmt.Fprintf(b, "## %s\n\n", typ.Name())
	if c := g.typeComment(typ); c != "" {
		fmt.Fprintf(b, "%s\n\n", c)
	}
	b.WriteString("| field | type | meaning |\n|---|---|---|\n")
	for _, f := range g.fields(typ) {
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", f.name, f.kind, strings.ReplaceAll(f.doc, "|", `\|`))
	}
	b.WriteString("\n")
}

type fieldDoc struct{ name, kind, doc string }

// fields are the YAML fields of a struct type, inline ones merged.
func (g *typeDoc) fields(typ reflect.Type) []fieldDoc {
	var out []fieldDoc
	var prev string // the previous field's comment, for fields documented together
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" {
			out = append(out, g.fields(f.Type)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		doc := g.comment(typ, f.Name)
		if doc == "" && strings.Contains(prev, f.Name) {
			doc = "See `" + out[len(out)-1].name + "`."
		}
		if doc == "" {
			g.t.Errorf("%s.%s.%s (%s) has no doc comment: the scenario reference needs one", typ.PkgPath(), typ.Name(), f.Name, name)
		}
		if doc != "" && !strings.HasPrefix(doc, "See `") {
			prev = doc
		}
		out = append(out, fieldDoc{name, g.kind(f.Type), plain(doc, f.Name)})
	}
	return out
}

// kind describes a field's type, queueing the struct types it names.
func (g *typeDoc) kind(typ reflect.Type) string {
	switch {
	case typ == reflect.TypeFor[time.Duration]():
		return "duration"
	case typ == reflect.TypeFor[yaml.Node]():
		return "the kind's settings, as above"
	case typ == reflect.TypeFor[cluster.Users]():
		// Its own UnmarshalYAML reads a number or a process.
		return "integer, or " + g.kind(reflect.TypeFor[workload.ProcessSpec]())
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return g.kind(typ.Elem())
	case reflect.Slice:
		return "list of " + g.kind(typ.Elem())
	case reflect.Map:
		return "map of name to " + g.kind(typ.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Uint, reflect.Int32:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Struct:
		if !g.done[typ] {
			g.done[typ] = true
			g.queue = append(g.queue, typ)
		}
		return "[" + typ.Name() + "](#" + anchorOf(typ) + ")"
	}
	g.t.Errorf("the scenario reference cannot describe type %v", typ)
	return typ.String()
}

// comment is the doc comment of a field, from the source of its package.
func (g *typeDoc) comment(typ reflect.Type, field string) string {
	return g.load(typ.PkgPath())[typ.Name()+"."+field]
}

// typeComment is a type's doc comment, its name's sentence kept.
func (g *typeDoc) typeComment(typ reflect.Type) string {
	g.load(typ.PkgPath())
	return g.typeComments[typ.PkgPath()+"."+typ.Name()]
}

// load parses a package of the module for its comments.
func (g *typeDoc) load(pkg string) map[string]string {
	if m, ok := g.comments[pkg]; ok {
		return m
	}
	m := map[string]string{}
	g.comments[pkg] = m
	dir := filepath.Join(repoRoot, strings.TrimPrefix(pkg, "github.com/shoal-project/shoal"))
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			g.t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			decl, ok := n.(*ast.GenDecl)
			if !ok || decl.Tok != token.TYPE {
				return true
			}
			for _, spec := range decl.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(decl.Specs) == 1 {
					doc = decl.Doc
				}
				g.typeComments[pkg+"."+ts.Name.Name] = prose(doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, f := range st.Fields.List {
					c := prose(f.Doc)
					if c == "" {
						c = prose(f.Comment)
					}
					for _, name := range f.Names {
						m[ts.Name.Name+"."+name.Name] = c
					}
				}
			}
			return false
		})
	}
	return m
}

// plain drops a comment's Go-style opening "Field is" or "Field are":
// "Horizon is when arrivals stop" reads "When arrivals stop".
func plain(doc, field string) string {
	for _, verb := range []string{" is ", " are "} {
		if rest, ok := strings.CutPrefix(doc, field+verb); ok && rest != "" {
			return strings.ToUpper(rest[:1]) + rest[1:]
		}
	}
	return doc
}

// prose is a comment as one paragraph.
func prose(c *ast.CommentGroup) string {
	if c == nil {
		return ""
	}
	return paragraph(c.Text())
}

// crdReference is the operator's CRDs' reference, from their OpenAPI
// schemas in deploy/helm/shoal/crds: every field's path, type and description.
func crdReference(t *testing.T) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot, "deploy", "helm", "shoal", "crds", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no CRDs in deploy/helm/shoal/crds")
	}
	var b bytes.Buffer
	b.WriteString(`# Operator CRDs reference

<!-- Generated from deploy/helm/shoal/crds/*.yaml by 'go generate ./cmd/shoal'. Do not
edit: the CRDs are generated from the Go types in operator/api/v1alpha1 (controller-gen),
whose comments are the descriptions below. -->

` + "`shoal operator`" + ` reconciles three kinds of the group ` + "`shoal.io`" + `. [Run on
Kubernetes](../guide/kubernetes.md) shows them at work; ` + "`deploy/examples/`" + ` has one
of each.

`)
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := sigsyaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, v := range crd.Spec.Versions {
			fmt.Fprintf(&b, "## %s\n\n", crd.Spec.Names.Kind)
			fmt.Fprintf(&b, "`%s/%s`, %s, file `deploy/helm/shoal/crds/%s`.", crd.Spec.Group, v.Name, strings.ToLower(string(crd.Spec.Scope)), filepath.Base(path))
			if len(crd.Spec.Names.ShortNames) > 0 {
				fmt.Fprintf(&b, " Short names: %s.", strings.Join(crd.Spec.Names.ShortNames, ", "))
			}
			b.WriteString("\n\n")
			schema := v.Schema.OpenAPIV3Schema
			fmt.Fprintf(&b, "%s\n\n", paragraph(schema.Description))
			if len(v.AdditionalPrinterColumns) > 0 {
				b.WriteString("`kubectl get` shows:")
				for _, c := range v.AdditionalPrinterColumns {
					fmt.Fprintf(&b, " %s (`%s`)", c.Name, c.JSONPath)
				}
				b.WriteString(".\n\n")
			}
			b.WriteString("| field | type | meaning |\n|---|---|---|\n")
			for _, top := range []string{"spec", "status"} {
				if p, ok := schema.Properties[top]; ok {
					for _, path := range schemaRows(&b, top, &p, slices.Contains(schema.Required, top)) {
						t.Errorf("%s: %s has no description: the CRDs' reference needs one (a comment on its Go field, then go generate ./operator/...)",
							crd.Spec.Names.Kind, path)
					}
				}
			}
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// schemaRows writes a row for the field at path and, below it, one for
// each of its properties (and its items' properties, as path[]). It
// returns the paths of the fields without a description.
func schemaRows(b *bytes.Buffer, path string, s *apiextensionsv1.JSONSchemaProps, required bool) (bare []string) {
	if strings.TrimSpace(s.Description) == "" {
		bare = append(bare, path)
	}
	typ := s.Type
	switch {
	case s.XIntOrString:
		typ = "integer or string"
	case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && typ == "":
		typ = "any"
	case typ == "array" && s.Items != nil && s.Items.Schema != nil:
		typ = "list of " + s.Items.Schema.Type
	case typ == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		typ = "map of string to " + s.AdditionalProperties.Schema.Type
	}
	var extra []string
	if required {
		extra = append(extra, "Required.")
	}
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, "`"+strings.Trim(string(e.Raw), `"`)+"`")
		}
		extra = append(extra, "One of "+strings.Join(vals, ", ")+".")
	}
	if s.Default != nil {
		extra = append(extra, "Default `"+string(s.Default.Raw)+"`.")
	}
	if s.Minimum != nil {
		extra = append(extra, fmt.Sprintf("At least %g.", *s.Minimum))
	}
	if s.Maximum != nil {
		extra = append(extra, fmt.Sprintf("At most %g.", *s.Maximum))
	}
	doc := strings.TrimSpace(paragraph(s.Description) + " " + strings.Join(extra, " "))
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", path, typ, strings.ReplaceAll(doc, "|", `\|`))
	props, req := s.Properties, s.Required
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		props, req, path = s.Items.Schema.Properties, s.Items.Schema.Required, path+"[]"
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := props[name]
		bare = append(bare, schemaRows(b, path+"."+name, &p, slices.Contains(req, name))...)
	}
	return bare
}

// paragraph is a text as one paragraph.
func paragraph(s string) string { return strings.Join(strings.Fields(s), " ") }
