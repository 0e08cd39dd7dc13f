package slack

import (
	"fmt"
	"strings"
)

// The manifest of a distributed app is Manifest with the changes of
// distributionEdits: the Events API at BASE/slack/events instead of Socket
// Mode, the OAuth redirect URL, the App Home tab and its scope, and the
// events that end an installation. Each edit names a line of Manifest,
// which must be there once (a test holds them to it).

// distributionEdits are the edits of DistributionManifest: after the line
// old (with its indentation), add; or, with replace, old becomes add.
var distributionEdits = []struct {
	old, add string
	replace  bool
}{
	{old: "# It uses Socket Mode (no public URL); for the Events API over HTTP, set", replace: true,
		add: "# The manifest of a distributed app: workspaces add it at\n#   {{BASE}}/slack/install\n# and Slack sends its events to {{BASE}}/slack/events.\n# For one workspace with tokens in the environment: runblock manifest slack"},
	{old: "# socket_mode_enabled to false and add request_url entries pointing at", replace: true},
	{old: "# https://your.host/slack/events (see the README).", replace: true},
	{old: "    home_tab_enabled: false", replace: true,
		add: "    # The App Home: how to run code, the limits, and for admins the\n    # workspace's settings.\n    home_tab_enabled: true"},
	{old: "      should_escape: false", add: "      url: {{BASE}}/slack/events"},
	{old: "oauth_config:", add: "  # Where Slack sends the browser back during an install.\n  redirect_urls:\n    - {{BASE}}/slack/oauth_redirect"},
	{old: "  event_subscriptions:", add: "    request_url: {{BASE}}/slack/events"},
	{old: "      - reaction_added", add: "      # The App Home tab, and the end of an installation, which deletes it.\n      - app_home_opened\n      - app_uninstalled\n      - tokens_revoked"},
	{old: "    is_enabled: true", add: "    request_url: {{BASE}}/slack/events"},
	{old: "  org_deploy_enabled: false", replace: true,
		add: "  # Enterprise Grid orgs may install it org-wide: events of every workspace\n  # of the org are answered with the org's token.\n  org_deploy_enabled: true"},
	{old: "  socket_mode_enabled: true", replace: true, add: "  socket_mode_enabled: false"},
	{old: "  token_rotation_enabled: false", replace: true,
		add: "  # runblock refreshes rotating tokens, so true works too; Slack does not let\n  # an app turn rotation off again.\n  token_rotation_enabled: false"},
}

// DistributionManifest is the manifest of runblock as a distributed app
// served at base, such as https://runblock.example.com.
func DistributionManifest(base string) ([]byte, error) {
	base = strings.TrimSuffix(base, "/")
	lines := strings.Split(string(Manifest), "\n")
	for _, e := range distributionEdits {
		i, n := -1, 0
		for j, l := range lines {
			if l == e.old {
				i, n = j, n+1
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("manifest.yaml has %d lines %q, want 1", n, e.old)
		}
		var add []string
		if e.add != "" {
			add = strings.Split(strings.ReplaceAll(e.add, "{{BASE}}", base), "\n")
		}
		if e.replace {
			lines = append(lines[:i], append(add, lines[i+1:]...)...)
		} else {
			lines = append(lines[:i+1], append(add, lines[i+1:]...)...)
		}
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// distributionScopes are the bot scopes a distributed app asks for.
func distributionScopes() []string {
	m, err := DistributionManifest("https://runblock.invalid")
	if err != nil {
		panic(err) // manifest.yaml and distributionEdits disagree: TestDistributionManifest says where
	}
	return botScopes(m)
}
