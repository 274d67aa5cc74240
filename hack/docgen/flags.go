package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kube-sample/controller-manager/internal/app"
)

// flagReference writes docs/reference/flags.md from the command's own flag
// sets, in their --help sections.
func flagReference(_ string, files map[string][]byte) error {
	var b strings.Builder
	b.WriteString(header("the flag sets of internal/app (`app.FlagSets`), as `controller-manager --help` shows them"))
	b.WriteString("# Flag reference\n\nEvery flag of `controller-manager`, by the section `--help` lists it in. " +
		"Bad flags are reported all at once, one per line, and the manager exits 1.\n")
	fss := app.FlagSets()
	for _, name := range fss.Order {
		fs := fss.FlagSets[name]
		fmt.Fprintf(&b, "\n## %s\n\n| flag | type | default | meaning |\n|---|---|---|---|\n", name)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			flag := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				flag = "`-" + f.Shorthand + "`, " + flag
			}
			usage := f.Usage
			if f.Deprecated != "" {
				usage = "Deprecated: " + f.Deprecated + " " + usage
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", flag, f.Value.Type(), defaultValue(f), cell(usage))
		})
	}
	files["docs/reference/flags.md"] = []byte(b.String())
	return nil
}

func defaultValue(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "[]":
		return ""
	}
	return "`" + cell(f.DefValue) + "`"
}
