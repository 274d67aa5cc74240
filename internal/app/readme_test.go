package app

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestREADMEDocumentsEveryFlag keeps the README's flag table true: every
// flag of the manager (but the generic logging ones) must be named in it.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	logging := map[string]bool{}
	fss := NewOptions().Flags()
	fss.FlagSet("logging").VisitAll(func(f *pflag.Flag) { logging[f.Name] = true })
	NewCommand().Flags().VisitAll(func(f *pflag.Flag) {
		if logging[f.Name] || f.Name == "help" {
			return
		}
		if !strings.Contains(string(readme), "`--"+f.Name) && !strings.Contains(string(readme), "--"+f.Name+"`") &&
			!strings.Contains(string(readme), "/ `--"+f.Name) {
			t.Errorf("README.md does not document --%s", f.Name)
		}
	})
}
