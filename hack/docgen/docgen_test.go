package main

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func generated(t *testing.T) (root string, files map[string][]byte) {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err = generate(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// TestDocsUpToDate is `make verify`'s check, for `go test ./...` alone.
func TestDocsUpToDate(t *testing.T) {
	root, files := generated(t)
	if stale := staleFiles(root, files); len(stale) > 0 {
		t.Errorf("generated docs are stale (run `make docs`):\n  %s", strings.Join(stale, "\n  "))
	}
}

// TestFlagReferenceHasEveryFlag: every flag the command parses is in the
// reference, the logging ones included.
func TestFlagReferenceHasEveryFlag(t *testing.T) {
	_, files := generated(t)
	page := string(files["docs/reference/flags.md"])
	app.NewCommand().Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !strings.Contains(page, "`--"+f.Name+"`") {
			t.Errorf("docs/reference/flags.md does not document --%s", f.Name)
		}
	})
}

// TestReasonsAreConstants: every Event and condition reason in the code is
// a named constant (so that the reason reference has it), never a literal
// or a string built at the call.
func TestReasonsAreConstants(t *testing.T) {
	root, _ := generated(t)
	err := parseGoFiles(root, []string{"internal"}, func(_ string, fset *token.FileSet, f *ast.File) error {
		ast.Inspect(f, func(n ast.Node) bool {
			var reason ast.Expr
			switch n := n.(type) {
			case *ast.CallExpr:
				// recorder.Event(obj, type, reason, ...) and Eventf.
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Event" || sel.Sel.Name == "Eventf") && len(n.Args) >= 3 {
					reason = n.Args[2]
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Reason" {
					reason = n.Value
				}
			}
			switch reason.(type) {
			case *ast.BasicLit, *ast.BinaryExpr:
				t.Errorf("%s: a reason that is not a named constant", fset.Position(reason.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIngressGuideNamesEveryAnnotation: the hand-written guide keeps up
// with the annotations the generated reference lists.
func TestIngressGuideNamesEveryAnnotation(t *testing.T) {
	root, _ := generated(t)
	groups, err := findConsts(root, []string{"internal/controller/ingressmanager"}, "Annotation")
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "ingress-manager.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, c := range g.Consts {
			if !strings.Contains(string(guide), "`"+c.Value+"`") {
				t.Errorf("docs/ingress-manager.md does not explain %s (%s)", c.Value, c.Name)
			}
		}
	}
}

func TestUntemplate(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "Keystone refuses {{ $value }} Networks in namespace {{ $labels.network_namespace }}.",
			want: "Keystone refuses <value> Networks in namespace <network_namespace>."},
		{in: "{{ $value }} Networks not Ready{{ with $labels.reason }}, reason {{ . }}{{ end }}.",
			want: "<value> Networks not Ready, reason <reason>."},
		{in: `Ready={{ if eq $labels.reason "" }}Unknown{{ end }}`, err: "a template action other than"},
	} {
		got, err := untemplate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("untemplate(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("untemplate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
