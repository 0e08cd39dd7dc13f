// Package discord is the Discord adapter of runblock: it keeps a discordgo
// gateway session, turns messages, the /run command, the "Run code" message
// command and the run reaction into jobs for the shared scheduler, and
// answers each as a reply to the message that asked, with allowed mentions
// switched off on everything it sends.
//
// Triggers: a message starting with the prefix (default "!run") or
// mentioning the bot; any message in a DM; any message with a Python block
// in a channel of Config.Channels (or one of its threads) — when that list
// is set it is also the allow-list, and explicit triggers elsewhere get a
// "not in this channel" hint. /run takes a code option or opens a modal;
// "Run code" runs the message it is used on; a person adding the run
// reaction runs that message, also when a bot wrote it. Messages by bots,
// webhooks and the bot itself never trigger. Without the privileged Message
// Content intent (intents.go) the bot starts anyway: the prefix, the listed
// channels and the run reaction on others' messages go off, and it says so.
//
// While a run is in flight the message shows ⏳ and the channel shows
// typing; then the reply lands (cut to 2000 characters, the whole output as
// output.txt) and ⏳ becomes ✅ or ❌. Interactions are deferred at once and
// the result is edited into the response; hints and rejections are
// ephemeral. Editing an answered message within the edit window re-runs it
// into the same reply; deleting it deletes the reply; the mapping is an LRU
// bounded by Config.MaxAnswers, and what it does not know (after a restart,
// or once forgotten) is found on Discord by the reply's message_reference
// (recall.go). With Config.ShardCount the session is one shard of several.
//
// discordgo honours Discord's 429s (the reply waits, it is not lost) and
// resumes the session; the Bot's supervisor reopens the gateway after op 7,
// a dropped socket or missed heartbeats, and discordgo re-identifies on
// op 9. Every handler runs in a goroutine the Bot owns; Close waits for
// them.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/choices"
	"github.com/runblock/runblock/bots/internal/handlers"
	"github.com/runblock/runblock/bots/internal/netretry"
	"github.com/runblock/runblock/bots/internal/replycache"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Platform is the platform label the adapter reports to Metrics.
const Platform = "discord"

// Defaults for zero Config fields.
const (
	DefaultPrefix      = "!run"
	DefaultRunReaction = "▶️"
	DefaultEditWindow  = 10 * time.Minute
	DefaultMaxAnswers  = 1000
)

// maxInFlight bounds the events handled at once; the scheduler's queue is the
// real bound, this one only keeps a flood from piling up goroutines.
const maxInFlight = 512

// Metrics receives the adapter's observations; platform is "discord".
type Metrics interface {
	MessageReceived(platform string)
	MessageReplied(platform string)
	Reconnected(platform string)
}

// Config configures the Discord adapter.
type Config struct {
	Token       string        // DISCORD_BOT_TOKEN
	Channels    []string      // DISCORD_CHANNELS: channel ids where any Python block runs
	Prefix      string        // DISCORD_PREFIX, default "!run"
	GuildID     string        // DISCORD_GUILD_ID: register commands per guild
	RunReaction string        // DISCORD_RUN_REACTION, default "▶️"
	EditWindow  time.Duration // DISCORD_EDIT_WINDOW: edits within it re-run; 0 = never (config's default is 10m)
	// APIURL, when set, replaces "https://discord.com/" as the base of the
	// REST API (e.g. "http://proxy:8080/" for a REST proxy, or a test's
	// fake); the gateway is the one that API hands out.
	APIURL string
	// ShardID and ShardCount (DISCORD_SHARD_ID, DISCORD_SHARD_COUNT) make
	// the session one shard of several: Discord sends it the events of the
	// guilds with (guild_id >> 22) % ShardCount == ShardID, and direct
	// messages to shard 0. ShardCount 0 or 1 is one session for everything.
	ShardID    int
	ShardCount int
	// MaxFiles and MaxFilesBytes cap the attachments of a message that go
	// into its run, as the executor caps files (RUNBLOCK_MAX_FILES,
	// RUNBLOCK_MAX_FILES_BYTES); 0 takes the defaults, a negative MaxFiles
	// lets none in.
	MaxFiles      int
	MaxFilesBytes int64
	Render        formatting.RenderOptions
	Metrics       Metrics // nil: none counted
	// Settings keeps what each guild chose with /runblock settings
	// (guildsettings.go); nil keeps it in memory until the bot stops.
	Settings SettingsStore
	// UserRate and UserBurst are the operator's per-user rate (runs a
	// second, RUNBLOCK_USER_RATE) and burst, which the scheduler enforces:
	// a guild may choose a lower rate, not a higher one. 0: unlimited.
	UserRate  float64
	UserBurst int

	// MaxAnswers bounds the message → reply mapping kept for edits and
	// deletes; 0 means DefaultMaxAnswers.
	MaxAnswers int
	// Clock is the time source for the edit window; nil means time.Now.
	Clock func() time.Time
	// LiveClock times the live output (tests); nil: the real clock.
	LiveClock answer.Clock
	// Retry paces Open's tries while Discord cannot be reached (no network
	// yet); the zero value is netretry's default, about a minute.
	Retry netretry.Backoff
	// End, when set, ends a session's live process on a reset (the
	// executor's session manager); else a Submitter that has End(ctx, id)
	// does. Without either a reset clears the bot's record, and the next
	// cell's empty replay starts the session fresh.
	End func(ctx context.Context, id string) error
	// NoSessions (RUNBLOCK_SESSIONS off): every message runs alone
	// instead of as a cell of its thread's or reply chain's session.
	NoSessions bool
}

// ErrDisallowedIntents is returned by Open when Discord refuses the bot's
// intents (gateway close code 4014) even without the Message Content
// intent, which the bot drops when refused.
var ErrDisallowedIntents = errors.New("discord refused the bot's gateway intents (gateway close 4014) even without the Message Content intent: " +
	"check the Privileged Gateway Intents on the Bot page of the application in the Discord developer portal")

// closeDisallowedIntents is the gateway's close code for intents the
// application may not ask for.
const closeDisallowedIntents = 4014

// ErrShardingRequired is returned by Open when Discord wants the bot
// sharded (gateway close code 4011: it is in too many guilds for one
// session) or refuses the shard (4010).
var ErrShardingRequired = errors.New("discord wants this bot sharded (gateway close 4010/4011): " +
	"run one replica per shard with DISCORD_SHARD_COUNT set to the count (at most 2,500 guilds a shard) and DISCORD_SHARD_ID to each replica's number")

// ErrBadToken is returned by Open when Discord does not accept the token.
var ErrBadToken = errors.New("discord did not accept DISCORD_BOT_TOKEN: copy it again from the Bot page of the application in the Discord developer portal")

// Bot owns the Discord connection.
type Bot struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	flow *answer.Flow[source] // answers the messages, remembers the replies (by message id) for edits and deletes
	// settings are the guilds' choices (/runblock settings), cached.
	settings *choices.Cache
	rates    *choices.UserRates // the guilds' own per-user rates

	mu       sync.Mutex
	sess     *discordgo.Session
	opened   bool
	closing  bool
	started  bool // the supervisor runs
	userID   string
	appID    string
	sessions int    // READY and RESUMED seen
	access   Access // whether the Message Content intent is granted

	// own are the replies this process sent: their deletion answers no
	// message, and needs no lookup.
	own        *replycache.Cache[struct{}]
	ready      atomic.Bool
	handlers   *handlers.Group // every handler, bounded; its context parents runs and Discord calls
	reconnect  chan struct{}
	stop       chan struct{}
	supervised chan struct{}
}

// New returns a Bot; it does not connect.
func New(cfg Config, runner executor.Submitter, logger *slog.Logger) *Bot {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.RunReaction == "" {
		cfg.RunReaction = DefaultRunReaction
	}
	// Answers are remembered for the edit window, and for deleting the
	// reply with its message when edits do not re-run.
	remember := cfg.EditWindow
	if remember <= 0 {
		remember = DefaultEditWindow
	}
	if cfg.MaxAnswers <= 0 {
		cfg.MaxAnswers = DefaultMaxAnswers
	}
	now := cfg.Clock
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	b := &Bot{
		cfg:        cfg,
		log:        logger,
		now:        now,
		handlers:   handlers.New(maxInFlight, logger),
		own:        replycache.New[struct{}](cfg.MaxAnswers, remember, now),
		reconnect:  make(chan struct{}, 1),
		stop:       make(chan struct{}),
		supervised: make(chan struct{}),
		settings:   choices.NewCache(cfg.Settings, Platform, "guild", now, logger),
		rates:      choices.NewUserRates(now, "server"),
	}
	b.flow = answer.New[source](answer.Config{
		Platform: formatting.Discord,
		Runner:   choices.Held{Next: runner, Rates: b.rates, Settings: b.settings, Workspace: guildOfUser, Burst: cfg.UserBurst},
		Render:   cfg.Render,
		// Attachments come from Discord's CDN, not the API.
		Fetch: attach.Fetcher{
			Client: &http.Client{Timeout: 30 * time.Second},
			Limits: attach.Limits{Files: cfg.MaxFiles, Bytes: cfg.MaxFilesBytes},
		},
		MaxFiles: maxAttachments, OverMaxFiles: omitOverAttachments, TooLarge: omitUploadSize,
		MaxReplies: cfg.MaxAnswers,
		ReplyTTL:   remember,
		Now:        now,
		Replied:    b.metricReplied,
		Log:        logger,
		NoSessions: cfg.NoSessions,
		End:        answer.EnderOf(cfg.End, runner),
		Clock:      cfg.LiveClock,
		Colour:     true, // Discord renders ANSI colour in an ansi block
	}, platform{b})
	return b
}

// Open checks the token, connects the gateway, registers the commands and
// logs the invite URL. It fails fast on a refused token, a refused Message
// Content intent (with a hint saying where to turn it on) and a failed
// command registration. ctx bounds the REST calls; the gateway handshake is
// bounded by the dialer's timeout.
func (b *Bot) Open(ctx context.Context) error {
	b.mu.Lock()
	if b.opened {
		b.mu.Unlock()
		return errors.New("discord: already open")
	}
	b.opened = true
	b.mu.Unlock()
	b.flow.Opened(b.now())
	if strings.TrimSpace(b.cfg.Token) == "" {
		return errors.New("discord: no bot token")
	}
	if n := b.cfg.ShardCount; n > 1 && (b.cfg.ShardID < 0 || b.cfg.ShardID >= n) {
		return fmt.Errorf("discord: shard id %d is not one of the %d shards (0 to %d)", b.cfg.ShardID, n, n-1)
	}

	s, err := discordgo.New(authToken(b.cfg.Token))
	if err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	s.SyncEvents = true // handlers only hand work to goroutines the Bot owns
	s.ShouldReconnectOnError = false
	if b.cfg.ShardCount > 1 {
		s.ShardID, s.ShardCount = b.cfg.ShardID, b.cfg.ShardCount
	}
	s.Client = &http.Client{Timeout: 30 * time.Second}
	if b.cfg.APIURL != "" {
		rt, err := newRebase(b.cfg.APIURL, http.DefaultTransport)
		if err != nil {
			return fmt.Errorf("discord: %w", err)
		}
		s.Client.Transport = rt
	}
	s.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 15 * time.Second}
	s.AddHandler(b.onReady)
	s.AddHandler(b.onResumed)
	s.AddHandler(b.onDisconnect)
	s.AddHandler(b.onMessageCreate)
	s.AddHandler(b.onMessageUpdate)
	s.AddHandler(b.onMessageDelete)
	s.AddHandler(b.onReactionAdd)
	s.AddHandler(b.onInteraction)
	b.mu.Lock()
	b.sess = s
	b.mu.Unlock()

	var me *discordgo.User
	err = b.cfg.Retry.Do(ctx, b.log, "Discord", func(ctx context.Context) error {
		var err error
		me, err = s.User("@me", discordgo.WithContext(ctx))
		return err
	})
	var unreachable *netretry.Error
	if errors.As(err, &unreachable) {
		return fmt.Errorf("discord: %w", err)
	}
	if err != nil {
		if restStatus(err) == http.StatusUnauthorized {
			return fmt.Errorf("%w (%w)", ErrBadToken, err)
		}
		return fmt.Errorf("discord: checking the token: %w", err)
	}
	b.mu.Lock()
	b.userID = me.ID
	b.mu.Unlock()
	b.setAccess(s, b.detectAccess(ctx, s))

	err = b.cfg.Retry.Do(ctx, b.log, "Discord", func(context.Context) error { return b.openGateway(s) })
	if err != nil {
		return fmt.Errorf("discord: connecting the gateway: %w", gatewayError(err))
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		if err := s.Close(); err != nil {
			b.log.Debug("closing the gateway", "err", err)
		}
		return errors.New("discord: closed while opening")
	}
	b.started = true
	b.mu.Unlock()
	go b.supervise()
	fail := func(err error) error {
		b.mu.Lock()
		already := b.closing
		b.closing = true
		b.mu.Unlock()
		if already {
			return err // Close is shutting everything down
		}
		b.handlers.Stop()
		close(b.stop)
		<-b.supervised
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.handlers.Close(cancelled) // cancels the handlers and waits for them
		if cerr := s.Close(); cerr != nil {
			b.log.Debug("closing the gateway", "err", cerr)
		}
		return err
	}
	appID := b.applicationID()
	if _, err := s.ApplicationCommandBulkOverwrite(appID, b.cfg.GuildID, commands(b.cfg.GuildID), discordgo.WithContext(ctx)); err != nil {
		return fail(fmt.Errorf("discord: registering the /run and \"Run code\" commands: %w", err))
	}
	scope := "globally (they can take a while to show up)"
	if b.cfg.GuildID != "" {
		scope = "in guild " + b.cfg.GuildID
	}
	b.log.Info("discord connected", "user", me.Username, "user_id", me.ID, "commands", scope, "shard", s.ShardID, "shards", max(1, s.ShardCount))
	b.log.Info("discord invite URL (exactly the permissions runblock needs)", "url", InviteURL(appID))
	if b.cfg.GuildID == "" {
		b.log.Info("discord user install URL (/run and Run code for one person, anywhere)", "url", UserInstallURL(appID))
	}
	b.logAccess()
	b.ready.Store(true)
	return nil
}

// Ready reports whether the connection is up.
func (b *Bot) Ready() bool { return b.ready.Load() }

// Close stops taking new messages, waits for in-flight replies until ctx
// ends (then cancels the runs and waits for them to give up), and
// disconnects.
func (b *Bot) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closing || !b.opened {
		b.mu.Unlock()
		b.handlers.Stop()
		return nil
	}
	b.closing = true
	started := b.started
	s := b.sess
	b.mu.Unlock()
	b.handlers.Stop()
	b.ready.Store(false)

	if started {
		close(b.stop)
		<-b.supervised
	}
	var err error
	if herr := b.handlers.Close(ctx); herr != nil {
		err = fmt.Errorf("discord: %w", herr)
	}
	if s != nil {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("discord: closing the gateway: %w", cerr)
		}
	}
	return err
}

// supervise reopens the gateway after a disconnect (op 7, a dropped socket,
// missed heartbeats); discordgo resumes the session when it can.
func (b *Bot) supervise() {
	defer close(b.supervised)
	for {
		select {
		case <-b.stop:
			return
		case <-b.reconnect:
		}
		for attempt := 0; ; attempt++ {
			err := b.openGateway(b.session())
			if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
				break
			}
			err = gatewayError(err)
			b.log.Warn("reconnecting to the Discord gateway", "attempt", attempt+1, "err", err)
			if errors.Is(err, ErrDisallowedIntents) || errors.Is(err, ErrBadToken) || errors.Is(err, ErrShardingRequired) {
				b.log.Error("discord gateway refused the bot; not reconnecting", "err", err)
				return
			}
			t := time.NewTimer(backoff(attempt))
			select {
			case <-b.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// backoff is the wait before reconnect attempt n+1: 1 s doubling to 1 min.
func backoff(attempt int) time.Duration {
	d := time.Second << min(attempt, 6)
	return min(d, time.Minute)
}

func (b *Bot) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	b.mu.Lock()
	if r.User != nil {
		b.userID = r.User.ID
	}
	if r.Application != nil && r.Application.ID != "" {
		b.appID = r.Application.ID
	}
	b.mu.Unlock()
	b.connected()
}

func (b *Bot) onResumed(*discordgo.Session, *discordgo.Resumed) { b.connected() }

// connected counts a READY or RESUMED; every one after the first is a
// reconnect.
func (b *Bot) connected() {
	b.mu.Lock()
	b.sessions++
	again := b.sessions > 1
	closing := b.closing
	started := b.started
	b.mu.Unlock()
	if again {
		b.log.Info("discord gateway reconnected")
		b.cfg.Metrics.Reconnected(Platform)
	}
	if started && !closing {
		b.ready.Store(true)
	}
}

func (b *Bot) onDisconnect(*discordgo.Session, *discordgo.Disconnect) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing || !b.started {
		return
	}
	b.ready.Store(false)
	b.log.Warn("discord gateway disconnected; reconnecting")
	select {
	case b.reconnect <- struct{}{}:
	default:
	}
}

// spawn runs f in a goroutine the Bot owns, unless the Bot is closing or too
// many events are in flight; it reports whether f runs.
func (b *Bot) spawn(what string, f func(ctx context.Context)) bool {
	return b.handlers.Go(what, f)
}

// noMetrics is the Metrics of a Config without one.
type noMetrics struct{}

func (noMetrics) MessageReceived(string) {}
func (noMetrics) MessageReplied(string)  {}
func (noMetrics) Reconnected(string)     {}

// session is the gateway session Open made.
func (b *Bot) session() *discordgo.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess
}

func (b *Bot) botUserID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.userID
}

func (b *Bot) applicationID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.appID != "" {
		return b.appID
	}
	return b.userID // a bot's application id is its user id
}

// authToken adds the "Bot " scheme discordgo expects.
func authToken(tok string) string {
	tok = strings.TrimSpace(tok)
	if strings.HasPrefix(tok, "Bot ") {
		return tok
	}
	return "Bot " + tok
}

func restStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

func restCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

// gatewayError maps the gateway's close codes to errors that say what to do.
func gatewayError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4014:
			return fmt.Errorf("%w: %w", ErrDisallowedIntents, err)
		case 4004:
			return fmt.Errorf("%w: %w", ErrBadToken, err)
		case 4010, 4011:
			return fmt.Errorf("%w: %w", ErrShardingRequired, err)
		}
	}
	return err
}
