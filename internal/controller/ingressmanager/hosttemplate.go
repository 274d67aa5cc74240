package ingressmanager

import (
	"errors"
	"fmt"
	"strings"
	"text/template/parse"
)

// hostTemplate is a parsed --ingress-host-template: Go template syntax of
// which it takes text, comments and the fields {{.Name}} and
// {{.Namespace}}. It is not executed by text/template: that package
// resolves methods by name at run time, which keeps every exported method
// of every type in the binary (tens of megabytes here, resident in every
// replica), for functions and control structures a host has no need of.
type hostTemplate []hostPart

// hostPart is literal text, or the Service field it names.
type hostPart struct {
	text  string
	field string // "Name" or "Namespace"
}

// errHostTemplateSyntax says what a host template may hold.
var errHostTemplateSyntax = errors.New("a host template holds text and the fields {{.Name}} and {{.Namespace}} only (no functions, pipelines or control structures)")

func parseHostTemplate(text string) (hostTemplate, error) {
	trees, err := parse.Parse("ingress-host", text, "", "")
	if err != nil {
		return nil, err
	}
	tree := trees["ingress-host"]
	if len(trees) != 1 || tree == nil {
		return nil, fmt.Errorf("{{define}}: %w", errHostTemplateSyntax)
	}
	var t hostTemplate
	for _, n := range tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			t = append(t, hostPart{text: string(n.Text)})
		case *parse.CommentNode:
		case *parse.ActionNode:
			field := fieldName(n.Pipe)
			if field == "" {
				return nil, fmt.Errorf("%s: %w", n, errHostTemplateSyntax)
			}
			t = append(t, hostPart{field: field})
		default:
			return nil, fmt.Errorf("%s: %w", n, errHostTemplateSyntax)
		}
	}
	return t, nil
}

// fieldName returns "Name" or "Namespace" when p is {{.Name}} or
// {{.Namespace}}, else "".
func fieldName(p *parse.PipeNode) string {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return ""
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok || len(f.Ident) != 1 || (f.Ident[0] != "Name" && f.Ident[0] != "Namespace") {
		return ""
	}
	return f.Ident[0]
}

// render returns the host for a Service, surrounding white space trimmed.
func (t hostTemplate) render(data hostTemplateData) string {
	var b strings.Builder
	for _, p := range t {
		switch p.field {
		case "Name":
			b.WriteString(data.Name)
		case "Namespace":
			b.WriteString(data.Namespace)
		default:
			b.WriteString(p.text)
		}
	}
	return strings.TrimSpace(b.String())
}
