package main

import (
	"fmt"
	"strings"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// translationReference writes docs/reference/translations.md from the
// translation table of the ingress-manager (TranslationRows,
// UntranslatableRows) and the access-restricting keys of its families.
func translationReference(_ string, files map[string][]byte) error {
	var b strings.Builder
	b.WriteString(header("the translation table of internal/controller/ingressmanager (`TranslationRows`, `UntranslatableRows`, `IngressOnlyFamilies`)"))
	b.WriteString("# Translation table: Ingress annotations carried into the Gateway API\n\n" +
		"When a Service moves to an HTTPRoute (`ingress/gateway`), every key of its `ingress/annotations` of the prefixes " +
		"`nginx.ingress.kubernetes.io/` (ingress-nginx) and `traefik.ingress.kubernetes.io/` (Traefik) goes through this table, " +
		"from [translate.go](../../internal/controller/ingressmanager/translate.go). A key is either **carried**, rendered into the " +
		"route as below with the reader's documented meaning (and never copied onto the route as an annotation, where it would " +
		"mean nothing), or it **blocks**: the Service stays on (or goes back to) its Ingress, with one Warning " +
		"(`AccessControlOnIngress` when a key restricts access, else `NotCarriedToHTTPRoute`) naming each key and why, until " +
		"`ingress/gateway-acknowledged` lists it (or is `*`), which leaves it off the route. A key of these prefixes set on the " +
		"Service's Ingress by hand, rather than in `ingress/annotations`, blocks the same way. One Normal `CarriedToHTTPRoute` " +
		"says what the route carries and as what. See [the ingress-manager guide](../ingress-manager.md#behaviour-carried-to-the-httproute).\n\n" +
		"A value the reader would not take, or that the Gateway API cannot hold, blocks its key (and the keys that go with it), " +
		"the Warning saying what is wrong with it: nothing is rendered of a guess. A row that needs an extended feature of the " +
		"Gateway API renders only when the Gateway's GatewayClass lists it in `status.supportedFeatures`; otherwise its keys " +
		"block, naming the feature. A class that lists none (or that the controller cannot read) is trusted, and the Normal " +
		"says which features the route uses on trust.\n\n" +
		"## Carried\n\n" +
		"| keys | read by | Gateway API feature | renders | semantics | proof |\n|---|---|---|---|---|---|\n")
	for _, row := range ingressmanager.TranslationRows() {
		feats := "core"
		if len(row.Features) > 0 {
			feats = "extended: " + codeList("", row.Features)
		}
		fmt.Fprintf(&b, "| **%s**: %s | %s | %s | %s | [%s docs](%s) | %s |\n", cell(row.Title), codeList("", row.Keys),
			cell(row.Reader), feats, cell(row.Renders), cell(row.Reader), row.Docs, codeList("", row.Proof))
	}
	b.WriteString("\nProofs name tests of `internal/controller/ingressmanager` (`go test ./internal/controller/ingressmanager/ -run <name>`), " +
		"and, as `traffic:<name>`, tests of `test/integration/traffic`, whose requests go through Traefik, the before side served by its " +
		"`kubernetesIngressNGINX` provider where it implements the row, the after side by its Gateway provider (`make test` runs both); " +
		"`FuzzTranslate` checks every rendering against the HTTPRoute CRD's patterns and rules.\n\n" +
		"## Blocking\n\n" +
		"A key ending in `*` stands for every key that starts with what precedes it; one with `*` inside, for every key of that " +
		"form. Any other key of the two prefixes blocks too, as not known to the translation table.\n\n" +
		"| keys | read by | why |\n|---|---|---|\n")
	for _, f := range ingressmanager.IngressOnlyFamilies() {
		if f.Prefix != "nginx.ingress.kubernetes.io/" && f.Prefix != "traefik.ingress.kubernetes.io/" {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | restricts who may reach the backend, which an HTTPRoute does not enforce (Warning `AccessControlOnIngress`); instead: %s |\n",
			codeList(f.Prefix, f.Access), cell(f.Reader), cell(f.Instead))
	}
	for _, u := range ingressmanager.UntranslatableRows() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", codeList("", u.Keys), cell(u.Reader), cell(u.Why))
	}
	files["docs/reference/translations.md"] = []byte(b.String())
	return nil
}

// codeList joins items, each after prefix, as code, separated by commas.
func codeList[S ~string](prefix string, items []S) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = "`" + prefix + string(it) + "`"
	}
	return strings.Join(out, ", ")
}
