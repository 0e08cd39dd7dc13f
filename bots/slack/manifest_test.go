package slack

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDistributionManifest holds the distributed app's manifest to its
// golden file (go test ./bots/slack -run TestDistributionManifest -update
// rewrites it), and its scopes to what the install flow asks for.
func TestDistributionManifest(t *testing.T) {
	got, err := DistributionManifest("https://runblock.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "manifest-distribution.golden")
	if *update {
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
	// Both ask for the same scopes: users:read (admins, for Delete and
	// the settings) is in the one-workspace manifest too.
	if len(single) < 10 || !slices.Contains(BotScopes, "users:read") || !slices.Equal(BotScopes, single) {
		t.Errorf("scopes: one workspace %v, distributed %v", single, BotScopes)
	}
}
