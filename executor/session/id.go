package session

import "regexp"

// The rule for session ids that clients choose (the execute API's and the
// MCP tool's "session"): 1 to MaxIDLength characters of IDChars. The key a
// Manager gets adds the client, so that clients never reach each other's
// sessions.
const (
	MaxIDLength = 128
	IDChars     = "letters, digits and . _ : @ -"
)

var clientID = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)

// ValidID reports whether a client's session id follows the rule.
func ValidID(id string) bool { return clientID.MatchString(id) }
