// Package slack is the Slack adapter of runblock: it takes Python snippets
// from Slack messages (a mention, a DM, a listed channel, /run, the "Run
// code" shortcut, or a ▶️ reaction), runs them through the shared scheduler
// and answers in the message's thread.
//
// It connects over Socket Mode when an app-level token is set and serves the
// Events API over HTTP (Handler) when a signing secret is set; both paths
// feed the same dispatcher.
package slack

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/choices"
	"github.com/runblock/runblock/bots/internal/handlers"
	"github.com/runblock/runblock/bots/internal/netretry"
	"github.com/runblock/runblock/bots/internal/replycache"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/store"
)

// Platform is the platform label the adapter reports to Metrics.
const Platform = "slack"

// Manifest is the Slack app manifest of runblock, ready to paste into
// "Create an app from a manifest" (`runblock manifest slack` prints it).
//
//go:embed manifest.yaml
var Manifest []byte

// Identifiers the app manifest (Manifest) declares.
const (
	// ShortcutCallbackID is the callback id of the "Run code" message shortcut.
	ShortcutCallbackID = "run_code"
	// ModalCallbackID is the callback id of the modal /run opens without text.
	ModalCallbackID = "runblock_run"
	// SlashCommand is the command that runs its text.
	SlashCommand = "/run"
	modalBlockID = "code"
	modalInputID = "code"
)

// Defaults of the settings.
const (
	DefaultRunReaction = "arrow_forward"  // SLACK_RUN_REACTION
	DefaultEditWindow  = 10 * time.Minute // SLACK_EDIT_WINDOW
)

// Bounds of the adapter's own memory.
const (
	maxReplies  = 10_000         // source message → reply entries kept
	replyTTL    = 24 * time.Hour // longest a reply can still be edited or deleted through its source
	maxSeen     = 10_000         // event ids remembered for de-duplication
	seenTTL     = time.Hour      // Slack retries within minutes
	maxInFlight = 512            // handlers running at once; more are dropped (and logged)
)

// Metrics receives the adapter's observations; platform is "slack".
type Metrics interface {
	MessageReceived(platform string)
	MessageReplied(platform string)
	Reconnected(platform string)
}

// Config configures the Slack adapter.
type Config struct {
	BotToken      string // SLACK_BOT_TOKEN, xoxb-
	AppToken      string // SLACK_APP_TOKEN, xapp-: Socket Mode
	SigningSecret string // SLACK_SIGNING_SECRET: Events API over HTTP (see Handler)
	// ClientID and ClientSecret (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET),
	// without BotToken, make runblock a distributed app: workspaces add it
	// at /slack/install, and each is answered with the token of its
	// installation in Store (see install.go).
	ClientID     string
	ClientSecret string
	// Store keeps the installations, the install flow's states and the
	// ids of events answered (shared by replicas); required with ClientID.
	Store store.Store
	// Channels (SLACK_CHANNELS) are channel ids where any Python block runs
	// without a mention. When set, it is also the allow-list: mentions,
	// /run, the shortcut and the reaction elsewhere get a short "not in this
	// channel" notice (direct messages always work).
	Channels    []string
	RunReaction string        // SLACK_RUN_REACTION, default "arrow_forward"
	EditWindow  time.Duration // SLACK_EDIT_WINDOW: edits within it re-run; 0 = never
	// APIURL (SLACK_API_URL), when set, replaces "https://slack.com/api/"
	// as the Web API's base, ending in "/": GovSlack's
	// "https://slack-gov.com/api/", an egress proxy, or a test's fake.
	// Socket Mode follows: its URL comes from apps.connections.open.
	APIURL string
	// PublicURL (SLACK_PUBLIC_URL) is the distributed app's public base
	// URL, as given to `runblock manifest slack --url`: behind a reverse
	// proxy that strips a path prefix, the install cookie's path follows
	// it. Empty: the app is served at the root of its host.
	PublicURL string
	// Retry paces Open's tries while Slack cannot be reached (no network
	// yet); the zero value is netretry's default, about a minute.
	Retry netretry.Backoff
	// MaxFiles and MaxFilesBytes cap the attachments of a message that go
	// into its run, as the executor caps files (RUNBLOCK_MAX_FILES,
	// RUNBLOCK_MAX_FILES_BYTES); 0 takes the defaults, a negative MaxFiles
	// lets none in.
	MaxFiles      int
	MaxFilesBytes int64
	Render        formatting.RenderOptions
	// Limits are the limits of a run, which the App Home and /run help
	// show.
	Limits  Limits
	Metrics Metrics // nil: none counted
	// End, when set, ends a session's live process on a reset (the
	// executor's session manager); else a Submitter that has End(ctx, id)
	// does. Without either a reset clears the bot's record, and the next
	// cell's empty replay starts the session fresh.
	End func(ctx context.Context, id string) error
	// NoSessions (RUNBLOCK_SESSIONS off): every message runs alone
	// instead of as a cell of its thread's session.
	NoSessions bool
	// UserRate and UserBurst are the operator's per-user rate (runs a
	// second, RUNBLOCK_USER_RATE), which the scheduler enforces; a
	// workspace may choose a lower one with /run settings.
	UserRate  float64
	UserBurst int
	// LiveClock times the live output (tests); nil: the real clock.
	LiveClock answer.Clock
}

// ErrBadToken is returned by Open when Slack does not accept the bot token.
var ErrBadToken = errors.New("SLACK_BOT_TOKEN was rejected: copy the Bot User OAuth Token (xoxb-...) again from OAuth & Permissions of your Slack app, and reinstall the app to the workspace if it was removed")

// badToken holds the auth.test errors that mean the token itself is wrong.
var badToken = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true,
	"token_revoked": true, "token_expired": true, "not_allowed_token_type": true,
}

// Bot owns the Slack connection.
type Bot struct {
	cfg      Config
	log      *slog.Logger
	api      *slack.Client
	settings *choices.Cache     // the workspaces' choices (/run settings), cached
	rates    *choices.UserRates // the workspaces' own per-user rates
	now      func() time.Time
	files    *http.Client // downloads the files of messages

	flow     *answer.Flow[source]        // answers the messages, remembers the replies (by channel/ts)
	seen     *replycache.Cache[struct{}] // event ids handled
	mentions *replycache.Cache[struct{}] // mentions answered, by channel/ts, of whichever event came first
	handlers *handlers.Group             // every handler, bounded; its context parents runs and Slack calls
	single   atomic.Pointer[workspace]   // the workspace of BotToken, set by Open
	opts     []slack.Option              // of every workspace's Web API client
	oauth    *http.Client                // oauth.v2.access calls
	refresh  sync.Mutex                  // one token rotation at a time

	mu       sync.Mutex
	opened   bool
	closing  bool
	loops    sync.WaitGroup // socket and event loops
	stopSock context.CancelFunc

	ready atomic.Bool
}

// who is the bot's own identity, from auth.test.
type who struct {
	userID, botID, teamID string
}

// New returns a Bot; it does not connect.
func New(cfg Config, runner executor.Submitter, logger *slog.Logger) *Bot {
	if cfg.RunReaction == "" {
		cfg.RunReaction = "arrow_forward"
	}
	cfg.RunReaction = strings.Trim(cfg.RunReaction, ":")
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	opts := []slack.Option{
		// Slack's 429s are honoured (Retry-After), so replies are late, not lost.
		slack.OptionRetryConfig(slack.RetryConfig{
			MaxRetries:         8,
			RetryAfterDuration: 30 * time.Second,
			RetryAfterJitter:   250 * time.Millisecond,
			BackoffInitial:     100 * time.Millisecond,
			BackoffMax:         30 * time.Second,
			BackoffJitter:      50 * time.Millisecond,
		}),
	}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	var st choices.Store
	if cfg.Store != nil {
		st = cfg.Store // else /run settings are kept in memory
	}
	b := &Bot{
		cfg:      cfg,
		log:      logger,
		api:      slack.New(cfg.BotToken, append([]slack.Option{slack.OptionAppLevelToken(cfg.AppToken)}, opts...)...),
		opts:     opts,
		oauth:    &http.Client{Timeout: 30 * time.Second},
		now:      time.Now,
		files:    &http.Client{},
		handlers: handlers.New(maxInFlight, logger),
	}
	b.rates = choices.NewUserRates(func() time.Time { return b.now() }, "workspace")
	b.settings = choices.NewCache(st, Platform, "workspace", func() time.Time { return b.now() }, logger)
	b.flow = answer.New[source](answer.Config{
		Platform: formatting.Slack,
		Runner:   choices.Held{Next: runner, Rates: b.rates, Settings: b.settings, Workspace: teamOfUser, Burst: cfg.UserBurst},
		Render:   cfg.Render,
		// The workspace's bot token goes with the downloads of the
		// message's files (each file's attach.Source.Header), on Slack's
		// hosts only; files:read in the manifest allows it.
		Fetch: attach.Fetcher{
			Client:  b.files,
			Trusted: b.slackHost,
			Limits:  attach.Limits{Files: cfg.MaxFiles, Bytes: cfg.MaxFilesBytes},
		},
		MaxReplies: maxReplies,
		ReplyTTL:   replyTTL,
		Now:        func() time.Time { return b.now() },
		Replied:    b.replied,
		Log:        logger,
		NoSessions: cfg.NoSessions,
		Clock:      cfg.LiveClock,
		End:        answer.EnderOf(cfg.End, runner),
	}, platform{b})
	b.seen = replycache.New[struct{}](maxSeen, seenTTL, func() time.Time { return b.now() })
	b.mentions = replycache.New[struct{}](maxSeen, seenTTL, func() time.Time { return b.now() })
	return b
}

// Open checks the bot token (auth.test) and, with an app token, connects
// Socket Mode and waits for the first hello. It fails fast on bad
// credentials (ErrBadToken). Its errors do not name Slack: the caller
// says which adapter failed.
func (b *Bot) Open(ctx context.Context) error {
	b.mu.Lock()
	if b.opened {
		b.mu.Unlock()
		return errors.New("already open")
	}
	b.opened = true
	b.mu.Unlock()
	b.flow.Opened(b.now())
	if b.distributed() {
		if b.cfg.Store == nil {
			return errors.New("a distributed app (SLACK_CLIENT_ID) needs a store")
		}
		b.log.Info("distributed app: workspaces install at /slack/install, events at /slack/events")
		b.ready.Store(true)
		return nil
	}

	var auth *slack.AuthTestResponse
	err := b.cfg.Retry.Do(ctx, b.log, "Slack", func(ctx context.Context) error {
		var err error
		auth, err = b.api.AuthTestContext(ctx)
		return err
	})
	var unreachable *netretry.Error
	var answer slack.SlackErrorResponse
	switch {
	case errors.As(err, &unreachable):
		return err
	case errors.As(err, &answer) && badToken[answer.Err]:
		return fmt.Errorf("%w (auth.test: %w)", ErrBadToken, err)
	case err != nil:
		return fmt.Errorf("checking SLACK_BOT_TOKEN (auth.test): %w", err)
	}
	b.single.Store(&workspace{api: b.api, token: b.cfg.BotToken, self: &who{userID: auth.UserID, botID: auth.BotID, teamID: auth.TeamID}})
	b.log.Info("authenticated", "team", auth.Team, "bot_user", auth.UserID)
	if b.cfg.AppToken == "" {
		b.ready.Store(true)
		return nil
	}

	sm := socketmode.New(b.api)
	sockCtx, stop := context.WithCancel(context.Background())
	first := make(chan error, 1)
	var settled atomic.Bool
	report := func(err error) bool {
		if !settled.CompareAndSwap(false, true) {
			return false
		}
		first <- err
		return true
	}
	b.mu.Lock()
	b.stopSock = stop
	b.mu.Unlock()
	b.loops.Add(2)
	go b.runSocket(sockCtx, sm, report)
	go b.readEvents(sockCtx, sm, report)
	select {
	case err := <-first:
		if err != nil {
			stop()
			b.loops.Wait()
			return fmt.Errorf("socket mode (SLACK_APP_TOKEN): %w", err)
		}
		return nil
	case <-ctx.Done():
		stop()
		b.loops.Wait()
		return fmt.Errorf("socket mode: no connection: %w", ctx.Err())
	}
}

// runSocket keeps the Socket Mode client running until ctx ends: the client
// reconnects by itself on disconnect envelopes and dropped sockets, and this
// loop restarts it when it gives up. An auth error before the first hello is
// reported to Open instead.
func (b *Bot) runSocket(ctx context.Context, sm *socketmode.Client, report func(error) bool) {
	defer b.loops.Done()
	backoff := time.Second
	for {
		err := sm.RunContext(ctx)
		if ctx.Err() != nil {
			return
		}
		b.ready.Store(false)
		if isAuthError(err) && report(err) {
			return // Open fails
		}
		b.log.Error("socket mode stopped; restarting", "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Minute)
	}
}

func isAuthError(err error) bool {
	if err == nil {
		return false
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		err = errors.New(se.Err)
	}
	switch err.Error() {
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "not_allowed_token_type":
		return true
	}
	var code slack.StatusCodeError
	return errors.As(err, &code) && code.Code == 404
}

// readEvents acks and dispatches what the Socket Mode client delivers.
func (b *Bot) readEvents(ctx context.Context, sm *socketmode.Client, report func(error) bool) {
	defer b.loops.Done()
	connected := false
	for {
		var ev socketmode.Event
		select {
		case <-ctx.Done():
			return
		case ev = <-sm.Events:
		}
		switch ev.Type {
		case socketmode.EventTypeConnecting:
			b.ready.Store(false)
		case socketmode.EventTypeConnectionError:
			b.log.Warn("socket mode connection failed", "err", connErr(ev.Data))
		case socketmode.EventTypeInvalidAuth:
			b.log.Error("socket mode: invalid app token")
		case socketmode.EventTypeConnected:
			if connected {
				b.log.Info("socket mode reconnected")
				b.cfg.Metrics.Reconnected(Platform)
			}
			connected = true
		case socketmode.EventTypeHello:
			b.ready.Store(true)
			report(nil)
		case socketmode.EventTypeErrorBadMessage, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
			b.log.Warn("socket mode", "event", ev.Type, "detail", ev.Data)
		case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand, socketmode.EventTypeInteractive:
			b.handleSocket(ctx, sm, ev)
		}
	}
}

func connErr(data any) any {
	if e, ok := data.(*slack.ConnectionErrorEvent); ok {
		return e.ErrorObj
	}
	return data
}

// Ready reports whether the connection is up.
func (b *Bot) Ready() bool { return b.ready.Load() }

// Close stops taking new events, waits for in-flight replies until ctx ends
// (then cancels them), and disconnects.
func (b *Bot) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closing = true
	stop := b.stopSock
	b.mu.Unlock()
	b.handlers.Stop()
	b.ready.Store(false)
	if stop != nil {
		stop()
	}
	b.loops.Wait()
	if err := b.handlers.Close(ctx); err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	return nil
}

// spawn runs fn as a handler owned by the Bot, unless the Bot is closing or
// too many handlers are in flight.
func (b *Bot) spawn(what string, fn func(ctx context.Context)) bool {
	return b.handlers.Go(what, fn)
}

// noMetrics is the Metrics of a Config without one.
type noMetrics struct{}

func (noMetrics) MessageReceived(string) {}
func (noMetrics) MessageReplied(string)  {}
func (noMetrics) Reconnected(string)     {}
