package slack

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestDistributionManifest holds the distributed app's manifest to its
// golden file (go test ./bots/slack -run TestDistributionManifest -update
// rewrites it), and its scopes to what the install flow asks for.
func TestDistributionManifest(t *testing.T) {
	got, err := DistributionManifest("https://runblock.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "manifest-distribution.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the distribution manifest differs from %s (-update rewrites it):\n%s", golden, got)
	}
	single := botScopes(Manifest)
	if len(single) < 10 || !slices.Contains(BotScopes, "users:read") || len(BotScopes) != len(single)+1 {
		t.Errorf("scopes: one workspace %v, distributed %v", single, BotScopes)
	}
}
