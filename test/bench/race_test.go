//go:build race

package bench

// Under the race detector the smoke test builds the manager with -race too:
// it reuses the race-instrumented packages the test binary was built from
// (no second compilation of the dependencies) and checks the manager for
// races as well.
func init() { managerBuildFlags = []string{"-race"} }
