package app

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target the manager runs with
// when the GOGC environment variable is not set, in place of Go's 100.
//
// Most of a controller's heap is its informer caches, which live as long as
// the process; at Go's default the heap grows by as much garbage as the
// caches hold before each collection, so the memory a controller needs is
// about twice its caches. A lower target trades a little CPU, spent when
// objects change, for that headroom (Prometheus lowered its default for the
// same reason). GOGC, when set, wins, with Go's own meaning (off disables
// the collector).
const DefaultGCPercent = 50

// setDefaultGCPercent applies DefaultGCPercent unless getenv reports GOGC
// set. It returns the percentage in effect.
func setDefaultGCPercent(lookupEnv func(string) (string, bool)) int {
	if _, set := lookupEnv("GOGC"); set {
		// The runtime has read it; reading back leaves it in place.
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}

// SetDefaultGCPercent applies DefaultGCPercent unless GOGC is set; main
// calls it first thing.
func SetDefaultGCPercent() int { return setDefaultGCPercent(os.LookupEnv) }
