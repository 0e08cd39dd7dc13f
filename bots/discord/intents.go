package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// The Message Content intent is privileged: an application gets the content
// of guild messages only when it is turned on in the developer portal (and,
// past 100 servers, approved by Discord). Without it the bot still starts:
// DMs, messages that mention the bot (replies that ping it included), /run,
// Apps → Run code and the bot's own messages come with their content; only
// the triggers that read other messages are off.

// Application flags (GET /applications/@me) that grant the Message Content
// intent: approved (over 100 servers) or turned on below 100 servers.
const (
	flagGatewayMessageContent        = 1 << 19
	flagGatewayMessageContentLimited = 1 << 18
)

// Intents is what the bot asks the gateway for: guild and direct messages
// with their content (the privileged Message Content intent) and their
// reactions, for the run reaction; and guilds, whose channel and thread
// events let discordgo's state tell which channel a thread belongs to.
// Without the Message Content intent granted it asks for IntentsWithoutContent.
const Intents = IntentsWithoutContent | discordgo.IntentMessageContent

// IntentsWithoutContent is Intents without the privileged Message Content
// intent.
const IntentsWithoutContent = discordgo.IntentGuilds |
	discordgo.IntentGuildMessages |
	discordgo.IntentDirectMessages |
	discordgo.IntentGuildMessageReactions |
	discordgo.IntentDirectMessageReactions

// Access is whether the bot reads the content of every message it sees, and
// why not.
type Access struct {
	// MessageContent: the Message Content intent is granted.
	MessageContent bool
	// Why says where the answer came from: the application's flags, or
	// the gateway's refusal.
	Why string
}

// The triggers that need the Message Content intent, and those that do not.
var (
	contentTriggers   = []string{"prefix messages (%s)", "any Python block in the channels of DISCORD_CHANNELS", "the run reaction on a message that does not mention the bot"}
	noContentTriggers = []string{"mentions of the bot", "replies that mention it", "DMs", "/run", "Apps → Run code"}
)

// Off lists the triggers that are off; prefix is the message prefix.
func (a Access) Off(prefix string) []string {
	if a.MessageContent {
		return nil
	}
	off := make([]string, len(contentTriggers))
	for i, t := range contentTriggers {
		off[i] = strings.ReplaceAll(t, "%s", prefix)
	}
	return off
}

// On lists the triggers that work.
func (a Access) On(prefix string) []string {
	if !a.MessageContent {
		return noContentTriggers
	}
	return append([]string{strings.ReplaceAll(contentTriggers[0], "%s", prefix), "channels of DISCORD_CHANNELS", "the run reaction"}, noContentTriggers...)
}

// Report is Access in a sentence, for the log and `runblock doctor`.
func (a Access) Report(prefix string) string {
	if a.MessageContent {
		return "Message Content intent granted (" + a.Why + "): every trigger is on"
	}
	return "Message Content intent not granted (" + a.Why + "), so these triggers are off: " + strings.Join(a.Off(prefix), "; ") +
		". Still on: " + strings.Join(a.On(prefix), ", ") + "." +
		" To turn them on, enable \"Message Content Intent\" on the Bot page of the application in the Discord developer portal (past 100 servers Discord must approve it)"
}

// accessFromFlags reads the application's flags.
func accessFromFlags(flags int) Access {
	switch {
	case flags&flagGatewayMessageContent != 0:
		return Access{MessageContent: true, Why: "the application's flags: GATEWAY_MESSAGE_CONTENT"}
	case flags&flagGatewayMessageContentLimited != 0:
		return Access{MessageContent: true, Why: "the application's flags: GATEWAY_MESSAGE_CONTENT_LIMITED, under 100 servers"}
	}
	return Access{Why: "the application's flags lack GATEWAY_MESSAGE_CONTENT"}
}

// refused is the Access after the gateway closed with 4014.
var refused = Access{Why: "the gateway refused it with close code 4014"}

// application reads GET /applications/@me: the application's id and flags.
func application(ctx context.Context, s *discordgo.Session) (id string, flags int, err error) {
	body, err := s.RequestWithBucketID("GET", discordgo.EndpointApplication("@me"), nil, discordgo.EndpointApplication(""), discordgo.WithContext(ctx))
	if err != nil {
		return "", 0, err
	}
	var app struct {
		ID    string `json:"id"`
		Flags int    `json:"flags"`
	}
	if err := json.Unmarshal(body, &app); err != nil {
		return "", 0, fmt.Errorf("reading the application: %w", err)
	}
	return app.ID, app.Flags, nil
}

// detectAccess decides whether to ask for the Message Content intent from
// the application's flags; when they cannot be read it asks, and Open
// drops the intent if the gateway refuses it.
func (b *Bot) detectAccess(ctx context.Context, s *discordgo.Session) Access {
	id, flags, err := application(ctx, s)
	if err != nil {
		b.log.Warn("could not read the application's flags; asking for the Message Content intent, and going on without it if Discord refuses", "err", err)
		return Access{MessageContent: true, Why: "assumed: the application's flags could not be read"}
	}
	if id != "" {
		b.mu.Lock()
		b.appID = id
		b.mu.Unlock()
	}
	return accessFromFlags(flags)
}

// setAccess records a and sets the intents the next IDENTIFY asks for.
func (b *Bot) setAccess(s *discordgo.Session, a Access) {
	b.mu.Lock()
	b.access = a
	b.mu.Unlock()
	s.Identify.Intents = IntentsWithoutContent
	if a.MessageContent {
		s.Identify.Intents = Intents
	}
}

// Access reports whether the bot reads every message's content (known once
// Open returned).
func (b *Bot) Access() Access {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.access
}

// logAccess says in the log which triggers are on.
func (b *Bot) logAccess() {
	a := b.Access()
	if a.MessageContent {
		b.log.Info("discord "+a.Report(b.cfg.Prefix), "message_content", true)
		return
	}
	b.log.Warn("discord "+a.Report(b.cfg.Prefix), "message_content", false)
}

// CheckAccess asks Discord whether cfg's application has the Message
// Content intent (its flags), for `runblock doctor`; ctx bounds the call.
func CheckAccess(ctx context.Context, cfg Config) (Access, error) {
	s, err := discordgo.New(authToken(cfg.Token))
	if err != nil {
		return Access{}, fmt.Errorf("discord: %w", err)
	}
	s.Client = &http.Client{Timeout: 30 * time.Second}
	if cfg.APIURL != "" {
		rt, err := newRebase(cfg.APIURL, http.DefaultTransport)
		if err != nil {
			return Access{}, fmt.Errorf("discord: %w", err)
		}
		s.Client.Transport = rt
	}
	_, flags, err := application(ctx, s)
	if err != nil {
		if restStatus(err) == http.StatusUnauthorized {
			return Access{}, fmt.Errorf("%w (%w)", ErrBadToken, err)
		}
		return Access{}, fmt.Errorf("discord: reading the application: %w", err)
	}
	return accessFromFlags(flags), nil
}

// openGateway connects the gateway with the intents of the bot's Access;
// when Discord refuses the Message Content intent (close 4014) it drops
// it, says which triggers go off, and connects without.
func (b *Bot) openGateway(s *discordgo.Session) error {
	err := s.Open()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != closeDisallowedIntents || !b.Access().MessageContent {
		return err
	}
	b.setAccess(s, refused)
	b.log.Warn("discord refused the Message Content intent (gateway close 4014); connecting without it: prefix messages, DISCORD_CHANNELS and the run reaction go off", "err", err)
	return s.Open()
}
