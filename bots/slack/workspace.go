package slack

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/internal/store"
)

// refreshMargin is how long before its expiry a rotating token is
// refreshed: longer than a run and its reply take.
const refreshMargin = 10 * time.Minute

// storeTimeout bounds a store call made outside a request's context.
const storeTimeout = 10 * time.Second

// workspace is a Slack workspace (or an Enterprise Grid org) runblock
// answers in: its Web API client, the bot's identity there, and the token
// that downloads its files.
type workspace struct {
	// key is its installation's key in the store; "" for the workspace of
	// SLACK_BOT_TOKEN.
	key   string
	api   *slack.Client
	self  *who
	token string
	// revoked: a call found the token revoked; what is left to send is
	// dropped (gone).
	revoked atomic.Bool
}

// dropped reports whether the workspace's replies are dropped.
func (ws *workspace) dropped() bool { return ws.revoked.Load() }

// distributed reports whether the Bot is a distributed app, answering each
// workspace with the token of its installation.
func (b *Bot) distributed() bool { return b.cfg.ClientID != "" && b.cfg.BotToken == "" }

// errNotInstalled: an event from a workspace that has no installation (any
// more), or whose token was found revoked.
var errNotInstalled = errors.New("runblock is not installed in this workspace")

// installed returns the workspace of the installation that answers for a
// team (or its org), its token refreshed when it is about to expire.
func (b *Bot) installed(ctx context.Context, enterpriseID, teamID string) (*workspace, error) {
	inst, err := b.installation(ctx, enterpriseID, teamID)
	switch {
	case err != nil:
		return nil, err
	case inst.Problem != "":
		return nil, fmt.Errorf("%w (its token was found %s)", errNotInstalled, inst.Problem)
	}
	if inst.RefreshToken != "" && !inst.ExpiresAt.IsZero() && b.now().Add(refreshMargin).After(inst.ExpiresAt) {
		if inst, err = b.rotate(ctx, inst); err != nil {
			return nil, err
		}
	}
	return b.workspaceOf(inst), nil
}

// installation is the installation that answers for a team (or its org),
// errNotInstalled when there is none.
func (b *Bot) installation(ctx context.Context, enterpriseID, teamID string) (store.Installation, error) {
	inst, err := b.cfg.Store.Installation(ctx, enterpriseID, teamID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Installation{}, errNotInstalled
	}
	return inst, err
}

func (b *Bot) workspaceOf(inst store.Installation) *workspace {
	return &workspace{
		key:   inst.Key(),
		api:   slack.New(inst.BotToken, b.opts...),
		self:  &who{userID: inst.BotUserID, botID: inst.BotID, teamID: inst.TeamID},
		token: inst.BotToken,
	}
}

// rotate trades the installation's refresh token for a new token
// (oauth.v2.access, grant_type refresh_token) and stores both, once at a
// time in this process; a token another handler refreshed meanwhile is
// taken as it is.
func (b *Bot) rotate(ctx context.Context, inst store.Installation) (store.Installation, error) {
	b.refresh.Lock()
	defer b.refresh.Unlock()
	cur, err := b.cfg.Store.Installation(ctx, inst.EnterpriseID, inst.TeamID)
	if err != nil {
		return store.Installation{}, err
	}
	if cur.Key() == inst.Key() && b.now().Add(refreshMargin).Before(cur.ExpiresAt) {
		return cur, nil
	}
	resp, err := slack.RefreshOAuthV2TokenContext(ctx, b.oauth, b.cfg.ClientID, b.cfg.ClientSecret, inst.RefreshToken, slack.OAuthOptionAPIURL(b.apiURL()))
	if err != nil {
		var se slack.SlackErrorResponse
		if errors.As(err, &se) {
			// invalid_refresh_token and the like: the installation is
			// no good any more.
			b.markInstallation(inst.Key(), se.Err)
			return store.Installation{}, fmt.Errorf("%w (refreshing its token: %s)", errNotInstalled, se.Err)
		}
		return store.Installation{}, fmt.Errorf("refreshing the token of %s: %w", inst.Key(), err)
	}
	inst.BotToken = resp.AccessToken
	if resp.RefreshToken != "" {
		inst.RefreshToken = resp.RefreshToken
	}
	inst.ExpiresAt = b.now().Add(time.Duration(resp.ExpiresIn) * time.Second)
	if err := b.cfg.Store.SaveInstallation(ctx, inst); err != nil {
		return store.Installation{}, err
	}
	b.log.Info("token rotated", "installation", inst.Key(), "expires", inst.ExpiresAt)
	return inst, nil
}

// apiURL is the Web API's base URL.
func (b *Bot) apiURL() string {
	if b.cfg.APIURL != "" {
		return b.cfg.APIURL
	}
	return slack.APIURL
}

// gone turns err into answer.ErrDropped when it says that an installed
// workspace's token is no good any more (revoked mid-run): the first time,
// with one log line, and the installation is marked in the store so that
// its next events are not taken. Other errors, and any error of the
// workspace of SLACK_BOT_TOKEN, pass as they are.
func (b *Bot) gone(ws *workspace, err error) error {
	var se slack.SlackErrorResponse
	if err == nil || ws.key == "" || !errors.As(err, &se) || !badToken[se.Err] {
		return err
	}
	if ws.revoked.CompareAndSwap(false, true) {
		b.log.Warn("reply dropped: the workspace's token is no longer valid; it must install runblock again", "installation", ws.key, "slack_error", se.Err)
		b.markInstallation(ws.key, se.Err)
	}
	return answer.ErrDropped
}

// markInstallation records problem on the installation key.
func (b *Bot) markInstallation(key, problem string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := b.cfg.Store.MarkInstallation(ctx, key, problem); err != nil {
		b.log.Error("marking an installation", "installation", key, "err", err)
	}
}

// uninstalled deletes the installation of a team (or its org): the app was
// uninstalled (app_uninstalled) or its bot token revoked (tokens_revoked).
// An error is for Slack to deliver the event again.
func (b *Bot) uninstalled(ctx context.Context, enterpriseID, teamID, why string) error {
	inst, err := b.installation(ctx, enterpriseID, teamID)
	switch {
	case errors.Is(err, errNotInstalled):
		return nil // deleted already
	case err != nil:
		return err
	}
	if err := b.cfg.Store.DeleteInstallation(ctx, inst.Key()); err != nil {
		return err
	}
	b.log.Info("installation deleted", "installation", inst.Key(), "event", why)
	return nil
}
