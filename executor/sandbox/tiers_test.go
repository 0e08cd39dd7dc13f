package sandbox

import (
	"context"
	"testing"
)

// TestReducedTiers checks that every fallback tier starts and verifies the
// layers it turns on, so a machine without user namespaces or Landlock
// still gets what it can.
func TestReducedTiers(t *testing.T) {
	py, err := findPython(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{}.withDefaults()
	for _, set := range append(tiers[1:], layerSet{}) {
		t.Run(set.String(), func(t *testing.T) {
			pl, err := newPlan(py, set)
			if err != nil {
				t.Fatal(err)
			}
			layers, err := canary(context.Background(), cfg, pl, pl.start)
			if err != nil {
				t.Fatal(err)
			}
			if bad := unverified(layers); len(bad) > 0 {
				t.Fatalf("not enforced: %v", bad)
			}
			for _, l := range layers {
				if l.Active {
					t.Logf("%s verified", l.Name)
				}
			}
		})
	}
}
