package app

import (
	"runtime/debug"
	"testing"
)

func TestSetDefaultGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	debug.SetGCPercent(100)
	if got := setDefaultGCPercent(func(string) (string, bool) { return "", false }); got != DefaultGCPercent {
		t.Errorf("without GOGC: %d, want %d", got, DefaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("without GOGC the runtime has %d, want %d", got, DefaultGCPercent)
	}

	// With GOGC set the runtime's reading of it (here 100) stays.
	if got := setDefaultGCPercent(func(string) (string, bool) { return "100", true }); got != 100 {
		t.Errorf("with GOGC=100: %d, want 100", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100 the runtime has %d, want 100", got)
	}
}
