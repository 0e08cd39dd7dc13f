package fakeslack

import (
	"net/http"
	"strings"
	"time"
)

// The OAuth side of the fake: an app with ClientID and ClientSecret that
// workspaces install (Authorize mints the code Slack would send back to
// the app's redirect URL), oauth.v2.access for the code and for a refresh
// token, and a bot token per installation that auth.test and every other
// method answer for. BotToken is the token of TeamID, installed from the
// start.

// The distributed app's credentials the fake accepts.
const (
	ClientID     = "1111111111.2222222222"
	ClientSecret = "fake-client-secret"
	// TokenLifetime is how long a rotating token lives (expires_in), as
	// Slack's: 12 hours.
	TokenLifetime = 12 * time.Hour
)

// Identity is whom a bot token speaks for.
type Identity struct {
	TeamID, EnterpriseID string
	IsEnterpriseInstall  bool
	BotUserID, BotID     string
}

// Install is a workspace's approval of the app on Slack's authorize page.
type Install struct {
	TeamID, TeamName    string
	EnterpriseID        string
	IsEnterpriseInstall bool
	UserID              string // the installer
	// Rotate: the app has token rotation on; the token expires after
	// TokenLifetime and comes with a refresh token.
	Rotate bool
}

// grant is a code or a refresh token waiting to be traded.
type grant struct {
	Install
	scope string
}

// Authorize approves the app for a workspace, as a user on Slack's
// authorize page would, and returns the code Slack puts into the redirect;
// the code is good for one oauth.v2.access.
func (s *Server) Authorize(in Install, scope string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	code := s.newIDLocked("code-")
	s.codes[code] = grant{in, scope}
	return code
}

// Token returns the bot token the workspace team's installation holds now
// ("" when it has none).
func (s *Server) Token(team string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current[team]
}

// Revoke revokes a token: calls with it answer token_revoked.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[token] = true
}

// SetAdmin makes a user a workspace admin in users.info.
func (s *Server) SetAdmin(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admins[user] = true
}

// identityLocked checks a call's token: the identity it speaks for, or
// the error Slack answers.
func (s *Server) identityLocked(c Call) (Identity, string) {
	switch {
	case c.Token == "":
		return Identity{}, "not_authed"
	case s.revoked[c.Token]:
		return Identity{}, "token_revoked"
	}
	id, ok := s.tokens[c.Token]
	if !ok {
		return Identity{}, "invalid_auth"
	}
	return id, ""
}

// oauthLocked answers oauth.v2.access: a code, or a refresh token with
// grant_type refresh_token.
func (s *Server) oauthLocked(c Call) (int, map[string]any) {
	if c.Get("client_id") != ClientID || c.Get("client_secret") != ClientSecret {
		return http.StatusOK, failed("invalid_client_id")
	}
	var g grant
	if c.Get("grant_type") == "refresh_token" {
		r, ok := s.refresh[c.Get("refresh_token")]
		if !ok {
			return http.StatusOK, failed("invalid_refresh_token")
		}
		g = r
	} else {
		code := c.Get("code")
		r, ok := s.codes[code]
		if !ok {
			return http.StatusOK, failed("invalid_code")
		}
		delete(s.codes, code) // single use
		g = r
	}
	id := Identity{TeamID: g.TeamID, EnterpriseID: g.EnterpriseID, IsEnterpriseInstall: g.IsEnterpriseInstall, BotUserID: BotUserID, BotID: BotID}
	owner := g.TeamID
	if g.IsEnterpriseInstall {
		owner = g.EnterpriseID
	}
	token := "xoxb-" + owner + "-" + s.newIDLocked("")
	resp := map[string]any{
		"ok": true, "access_token": token, "token_type": "bot", "scope": g.scope,
		"bot_user_id": id.BotUserID, "app_id": AppID,
		"team":       map[string]any{"id": g.TeamID, "name": g.TeamName},
		"enterprise": nil, "is_enterprise_install": g.IsEnterpriseInstall,
		"authed_user": map[string]any{"id": g.UserID},
	}
	if g.EnterpriseID != "" {
		resp["enterprise"] = map[string]any{"id": g.EnterpriseID}
	}
	if g.Rotate {
		token = "xoxe.xoxb-1-" + owner + "-" + s.newIDLocked("")
		refresh := "xoxe-1-" + owner + "-" + s.newIDLocked("")
		s.refresh[refresh] = g
		resp["access_token"], resp["refresh_token"], resp["expires_in"] = token, refresh, int(TokenLifetime/time.Second)
	}
	s.tokens[token] = id
	s.current[owner] = token
	s.notifyLocked()
	return http.StatusOK, resp
}

// authTestLocked answers auth.test for the identity of the call's token.
func (s *Server) authTestLocked(id Identity) (int, map[string]any) {
	return http.StatusOK, map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "runblock",
		"team_id": id.TeamID, "enterprise_id": id.EnterpriseID, "is_enterprise_install": id.IsEnterpriseInstall,
		"user_id": id.BotUserID, "bot_id": id.BotID}
}

// EventCallbackIn wraps an inner event as the Events API delivers it to
// the installation of id.
func (s *Server) EventCallbackIn(id Identity, event any) (payload map[string]any, eventID string) {
	p, eventID := s.EventCallback(event)
	p["team_id"] = id.TeamID
	if id.EnterpriseID != "" {
		p["enterprise_id"] = id.EnterpriseID
	}
	p["authorizations"] = []map[string]any{{"team_id": id.TeamID, "enterprise_id": id.EnterpriseID, "user_id": id.BotUserID, "is_bot": true, "is_enterprise_install": id.IsEnterpriseInstall}}
	return p, eventID
}

// Uninstall removes the app from a workspace (or org): its tokens stop
// working, and it returns the app_uninstalled event Slack sends.
func (s *Server) Uninstall(owner string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, id := range s.tokens {
		if id.TeamID == owner || (id.IsEnterpriseInstall && id.EnterpriseID == owner) {
			s.revoked[tok] = true
		}
	}
	delete(s.current, owner)
	return map[string]any{"type": "app_uninstalled", "event_ts": strings.TrimSpace(s.newTSLocked())}
}

// TokensRevoked is the tokens_revoked event for bot user ids.
func TokensRevoked(botUsers ...string) map[string]any {
	return map[string]any{"type": "tokens_revoked", "tokens": map[string]any{"bot": botUsers}, "event_ts": "1700000000.000100"}
}
