package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// constant is one exported string constant and what its doc comment says.
type constant struct {
	Name, Value string
	// Doc is the constant's own doc comment, Group that of its const block.
	Doc, Group string
	// File is the path of its file relative to the repository root (no
	// line: the page would go stale with every edit above the constant).
	File string
}

// constGroup is a const block's constants of one kind.
type constGroup struct {
	Pkg, Doc string
	Consts   []constant
}

// findConsts returns the exported string constants whose names start with
// one of prefixes, in every non-test Go file under dirs, grouped by const
// block in source order.
func findConsts(root string, dirs []string, prefixes ...string) ([]constGroup, error) {
	var groups []constGroup
	err := parseGoFiles(root, dirs, func(rel string, fset *token.FileSet, f *ast.File) error {
		g, err := fileConsts(rel, fset, f, prefixes)
		groups = append(groups, g...)
		return err
	})
	return groups, err
}

func fileConsts(rel string, fset *token.FileSet, f *ast.File, prefixes []string) ([]constGroup, error) {
	pkg := path.Dir(rel)
	var groups []constGroup
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		g := constGroup{Pkg: pkg, Doc: text(gd.Doc)}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !name.IsExported() || !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name.Name, p) }) {
					continue
				}
				value, err := stringValue(vs, i)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", rel, name.Name, err)
				}
				c := constant{Name: name.Name, Value: value, Doc: text(vs.Doc), Group: g.Doc, File: rel}
				if c.Doc == "" && c.Group == "" {
					return nil, fmt.Errorf("%s: %s has no doc comment (the generated reference shows it)", fset.Position(name.Pos()), c.Name)
				}
				g.Consts = append(g.Consts, c)
			}
		}
		if len(g.Consts) > 0 {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// stringValue is the string literal the i-th name of vs is set to.
func stringValue(vs *ast.ValueSpec, i int) (string, error) {
	if i >= len(vs.Values) {
		return "", fmt.Errorf("no value of its own (iota or implicit repetition)")
	}
	lit, ok := vs.Values[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", fmt.Errorf("not a string literal, which the reference needs to show its value")
	}
	return strconv.Unquote(lit.Value)
}

func text(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	return strings.Join(strings.Fields(cg.Text()), " ")
}

// describe is c's doc comment with its Go name replaced by its value.
func describe(c constant) string {
	if c.Doc == "" {
		return "`" + c.Value + "`"
	}
	rest, ok := strings.CutPrefix(c.Doc, c.Name)
	if !ok {
		return "`" + c.Value + "`: " + prose(c.Doc)
	}
	if strings.HasPrefix(rest, " ") {
		return "`" + c.Value + "` " + prose(rest)
	}
	return "`" + c.Value + "`" + prose(rest)
}

// writeGroups renders groups as one section per const block.
func writeGroups(b *strings.Builder, groups []constGroup, heading func(constGroup) string) {
	for _, g := range groups {
		fmt.Fprintf(b, "\n## %s\n\n", heading(g))
		if g.Doc != "" && strings.TrimSuffix(g.Doc, ".") != title(g.Doc, g.Pkg) {
			b.WriteString(capitalize(prose(g.Doc)) + "\n\n")
		}
		for _, c := range g.Consts {
			fmt.Fprintf(b, "- %s ([`%s`](../../%s))\n", describe(c), c.Name, c.File)
		}
	}
}

// title is the start of a const block's doc comment, up to its first
// punctuation, or pkg when it has none.
func title(doc, pkg string) string {
	if doc == "" {
		return pkg
	}
	if i := strings.IndexAny(doc, ".(:;,"); i > 0 {
		doc = doc[:i]
	}
	return strings.TrimSpace(doc)
}

func capitalize(s string) string {
	r := []rune(s)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// annotationReference writes docs/reference/annotations.md from the
// Annotation* constants of the ingress-manager.
func annotationReference(root string, files map[string][]byte) error {
	groups, err := findConsts(root, []string{"internal/controller/ingressmanager"}, "Annotation")
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header("the `Annotation*` constants of internal/controller/ingressmanager and their doc comments"))
	b.WriteString("# Service annotation reference\n\nThe annotations ingress-manager reads on a Service (and on a user's Ingress " +
		"that moves to an HTTPRoute), and those it writes on the Ingress or HTTPRoute it moves away from or makes. " +
		"See [the ingress-manager guide](../ingress-manager.md) for how they combine.\n")
	writeGroups(&b, groups, func(g constGroup) string { return title(g.Doc, g.Pkg) })
	b.WriteString("\n## Keys of ingress/annotations only an Ingress controller reads\n\n" +
		"On an HTTPRoute these keys mean nothing. Those of ingress-nginx (`nginx.ingress.kubernetes.io/`) and Traefik " +
		"(`traefik.ingress.kubernetes.io/`) go through the [translation table](translations.md): carried into the route, or " +
		"keeping the Service on its Ingress. Of the other prefixes, those under *restricts access* keep the Service on its " +
		"Ingress (Warning `AccessControlOnIngress`) until `ingress/gateway-acknowledged` lists them (or is `*`) or they are " +
		"removed, and the others are put on the route with a Warning `IgnoredForHTTPRoute` naming them. A pattern ending in " +
		"`*` stands for every key that starts with it. Keys of any other prefix are put on the HTTPRoute as on the Ingress. " +
		"From `ingressmanager.IngressOnlyFamilies` ([ingressonly.go](../../internal/controller/ingressmanager/ingressonly.go)).\n\n" +
		"| prefix | read by | restricts access | with the Gateway API instead |\n|---|---|---|---|\n")
	for _, f := range ingressmanager.IngressOnlyFamilies() {
		access := []string{}
		for _, a := range f.Access {
			access = append(access, "`"+a+"`")
		}
		if len(access) == 0 {
			access = append(access, "none")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Prefix, cell(f.Reader), strings.Join(access, ", "), cell(f.Instead))
	}
	files["docs/reference/annotations.md"] = []byte(b.String())
	return nil
}

// reasonReference writes docs/reference/reasons.md from every Reason* and
// Condition* constant in internal/ and pkg/apis/.
func reasonReference(root string, files map[string][]byte) error {
	groups, err := findConsts(root, []string{"pkg/apis", "internal"}, "Reason", "Condition")
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header("every `Reason*` and `Condition*` constant of pkg/apis and internal/ and their doc comments"))
	b.WriteString("# Condition and Event reason reference\n\nEvery status condition and Event reason the controllers set, " +
		"by the package that defines it. `kubectl describe` shows the Events of an object; " +
		"`kubectl get events --field-selector reason=<reason>` finds them across objects.\n")
	writeGroups(&b, groups, func(g constGroup) string { return fmt.Sprintf("%s (`%s`)", title(g.Doc, g.Pkg), g.Pkg) })
	files["docs/reference/reasons.md"] = []byte(b.String())
	return nil
}
