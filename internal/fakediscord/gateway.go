package fakediscord

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Gateway close codes the fake uses.
const (
	CloseAuthenticationFailed = 4004
	CloseInvalidShard         = 4010
	CloseShardingRequired     = 4011
	CloseDisallowedIntents    = 4014
)

// replayLimit bounds the events kept for RESUME.
const replayLimit = 1000

// Bot is one bot account on the fake: its token, user, application and
// gateway session. Fields are read-only after NewBot.
type Bot struct {
	s        *Server
	Token    string // as the client sends it, without "Bot "
	UserID   string
	AppID    string
	Username string

	// guarded by s.mu
	denyContent bool
	flags       int  // the application's flags (GET /applications/@me)
	content     bool // the session asked for the Message Content intent
	sessionID   string
	seq         int64
	events      []frame
	conn        *gwConn
	identifies  []Identify
	resumes     int
	sessions    int // READY and RESUMED sent

	// Sharding (RequireShards): each shard is a session of its own, a Bot
	// sharing the account's identity, by shard id.
	shardCount int
	shards     map[int]*Bot
}

type frame struct {
	Op   int             `json:"op"`
	Data json.RawMessage `json:"d"`
	Seq  int64           `json:"s,omitempty"`
	Type string          `json:"t,omitempty"`
}

type gwConn struct {
	ws  *websocket.Conn
	wmu sync.Mutex
}

func (c *gwConn) write(f frame, compress bool) error {
	b := marshal(f)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if !compress {
		return c.ws.WriteMessage(websocket.TextMessage, b)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(b); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return c.ws.WriteMessage(websocket.BinaryMessage, z.Bytes())
}

func (c *gwConn) close(code int, text string) {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.wmu.Unlock()
	c.ws.Close()
}

// NewBot registers a bot account; its token is accepted by REST and IDENTIFY.
func (s *Server) NewBot(name string) *Bot {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &Bot{s: s, UserID: s.newIDLocked(), Username: name, flags: FlagGatewayMessageContent}
	b.AppID = s.newIDLocked()
	b.Token = "fake." + b.UserID + "." + name
	s.bots[b.Token] = b
	return b
}

func (b *Bot) user() *discordgo.User {
	return &discordgo.User{ID: b.UserID, Username: b.Username, Discriminator: "0", Bot: true}
}

// Application flags that grant the Message Content intent: approved, or
// turned on by an application in under 100 servers. A new Bot has
// FlagGatewayMessageContent.
const (
	FlagGatewayMessageContent        = 1 << 19
	FlagGatewayMessageContentLimited = 1 << 18
)

// DenyMessageContent makes the application one without the Message Content
// intent, as when it is not turned on in the developer portal: its flags
// lack it, IDENTIFY asking for it fails with close code 4014, and guild
// messages come without content (see SetApplicationFlags).
func (b *Bot) DenyMessageContent() {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.denyContent = true
	b.flags &^= FlagGatewayMessageContent | FlagGatewayMessageContentLimited
}

// SetApplicationFlags sets the flags GET /applications/@me answers. A
// session that did not ask for the Message Content intent gets guild
// messages without their content, embeds, attachments and components,
// except those that mention the bot or that it wrote; so does REST for an
// application whose flags lack the intent.
func (b *Bot) SetApplicationFlags(flags int) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.flags = flags
}

// grantedLocked reports whether the application has the Message Content
// intent; s.mu must be held.
func (b *Bot) grantedLocked() bool {
	return b.flags&(FlagGatewayMessageContent|FlagGatewayMessageContentLimited) != 0
}

// visibleLocked is m as the bot reads it: without its content when
// content is false and Discord would withhold it (a guild message that
// neither mentions the bot nor is its own).
func (b *Bot) visibleLocked(m *discordgo.Message, content bool) *discordgo.Message {
	if content || m.GuildID == "" || (m.Author != nil && m.Author.ID == b.UserID) || strings.Contains(m.Content, "<@"+b.UserID+">") || strings.Contains(m.Content, "<@!"+b.UserID+">") {
		return m
	}
	for _, u := range m.Mentions {
		if u != nil && u.ID == b.UserID {
			return m
		}
	}
	cp := *m
	cp.Content, cp.Embeds, cp.Attachments, cp.Components = "", []*discordgo.MessageEmbed{}, []*discordgo.MessageAttachment{}, nil
	return &cp
}

// Identify is what the fake reads of an IDENTIFY payload.
type Identify struct {
	Token    string           `json:"token"`
	Intents  discordgo.Intent `json:"intents"`
	Compress bool             `json:"compress"`
	Shard    *[2]int          `json:"shard,omitempty"` // [shard id, shard count]
}

// RequireShards makes the account need n shards, as Discord does from
// 2,500 guilds: IDENTIFY without the shard array [id, n] closes with 4011
// (sharding required), a shard array with another count or an id out of
// range with 4010 (invalid shard). Each shard is a session of its own;
// Dispatch sends an event with a guild_id to the shard
// (guild_id >> 22) % n, and one without (a DM) to shard 0.
func (b *Bot) RequireShards(n int) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.shardCount = n
}

// Shard returns the session of shard id, for its WaitSessions and the like.
func (b *Bot) Shard(id int) *Bot {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.shardLocked(id)
}

func (b *Bot) shardLocked(id int) *Bot {
	if b.shards == nil {
		b.shards = make(map[int]*Bot)
	}
	sh := b.shards[id]
	if sh == nil {
		sh = &Bot{s: b.s, Token: b.Token, UserID: b.UserID, AppID: b.AppID, Username: b.Username}
		b.shards[id] = sh
	}
	return sh
}

// ShardOf is the shard that gets the events of guildID out of n.
func ShardOf(guildID string, n int) int {
	g, err := strconv.ParseUint(guildID, 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return int((g >> 22) % uint64(n))
}

// Identifies returns the IDENTIFY payloads received so far.
func (b *Bot) Identifies() []Identify {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return append([]Identify(nil), b.identifies...)
}

// Resumes counts RESUMEs that succeeded.
func (b *Bot) Resumes() int {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.resumes
}

// WaitSessions waits until the fake has sent n READY or RESUMED events, that
// is until the bot has connected n times.
func (b *Bot) WaitSessions(ctx context.Context, n int) error {
	return b.s.waitFor(ctx, fmt.Sprintf("%d gateway sessions", n), func() bool { return b.sessions >= n })
}

// WaitDisconnected waits until the bot has no gateway connection.
func (b *Bot) WaitDisconnected(ctx context.Context) error {
	return b.s.waitFor(ctx, "gateway disconnect", func() bool { return b.conn == nil })
}

// Dispatch sends an op 0 event of type t with data d. Events sent while the
// bot is disconnected are delivered when it resumes, as Discord does.
func (b *Bot) Dispatch(t string, d any) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.shardCount > 1 {
		var g struct {
			GuildID string `json:"guild_id"`
		}
		_ = json.Unmarshal(marshal(d), &g)
		b = b.shardLocked(ShardOf(g.GuildID, b.shardCount))
	}
	if t == "MESSAGE_CREATE" || t == "MESSAGE_UPDATE" {
		switch m := d.(type) {
		case *discordgo.Message:
			d = b.visibleLocked(m, b.content)
		case discordgo.Message:
			d = b.visibleLocked(&m, b.content)
		}
	}
	b.seq++
	f := frame{Op: 0, Type: t, Seq: b.seq, Data: marshal(d)}
	b.events = append(b.events, f)
	if len(b.events) > replayLimit {
		b.events = b.events[len(b.events)-replayLimit:]
	}
	if b.conn != nil {
		_ = b.conn.write(f, false)
	}
}

// sendOp sends a non-dispatch opcode on the live connection.
func (b *Bot) sendOp(op int, d any) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.conn == nil {
		return fmt.Errorf("fakediscord: %s is not connected", b.Username)
	}
	return b.conn.write(frame{Op: op, Data: marshal(d)}, false)
}

// Reconnect sends op 7: the client should close and resume.
func (b *Bot) Reconnect() error { return b.sendOp(7, nil) }

// InvalidSession forgets the session and sends op 9 (not resumable): the
// client should identify again.
func (b *Bot) InvalidSession() error {
	b.s.mu.Lock()
	b.sessionID = ""
	b.s.mu.Unlock()
	return b.sendOp(9, false)
}

// Drop cuts the gateway socket without a close frame.
func (b *Bot) Drop() error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.conn == nil {
		return fmt.Errorf("fakediscord: %s is not connected", b.Username)
	}
	return b.conn.ws.UnderlyingConn().Close()
}

// MessageCreate stores m (filling id, timestamp and guild) and dispatches
// MESSAGE_CREATE. It returns the stored message.
func (b *Bot) MessageCreate(m discordgo.Message) *discordgo.Message {
	stored := b.s.PutMessage(m)
	b.Dispatch("MESSAGE_CREATE", stored)
	return stored
}

// MessageUpdate stores the edit of m and dispatches MESSAGE_UPDATE.
func (b *Bot) MessageUpdate(m discordgo.Message) {
	now := time.Now().UTC()
	m.EditedTimestamp = &now
	if old, ok := b.s.Message(m.ID); ok && m.Reactions == nil {
		m.Reactions = slices.Clone(old.Reactions) // an edit keeps the reactions
	}
	b.s.PutMessage(m)
	b.Dispatch("MESSAGE_UPDATE", m)
}

// MessageDelete removes the message and dispatches MESSAGE_DELETE.
func (b *Bot) MessageDelete(channelID, messageID, guildID string) {
	b.s.mu.Lock()
	delete(b.s.messages, messageID)
	b.s.mu.Unlock()
	d := map[string]string{"id": messageID, "channel_id": channelID}
	if guildID != "" {
		d["guild_id"] = guildID
	}
	b.Dispatch("MESSAGE_DELETE", d)
}

// ReactionAdd dispatches MESSAGE_REACTION_ADD of emoji by user on a message;
// member is the reacting guild member (nil in DMs).
func (b *Bot) ReactionAdd(channelID, messageID, guildID, emoji string, user *discordgo.User) {
	d := map[string]any{
		"user_id": user.ID, "channel_id": channelID, "message_id": messageID,
		"emoji": map[string]any{"id": nil, "name": emoji},
	}
	if guildID != "" {
		d["guild_id"] = guildID
		d["member"] = map[string]any{"user": user, "roles": []string{}}
	}
	b.Dispatch("MESSAGE_REACTION_ADD", d)
}

type interaction struct {
	bot       *Bot
	id        string
	channelID string
	message   string // a component's: the id of the message the component is on
	original  string // message id of the @original response
	responded bool
	expired   bool // its 15 minutes are up (Expire)
}

// Interaction is what a test sends as INTERACTION_CREATE.
type Interaction struct {
	ID    string
	Token string
}

// InteractionCreate dispatches INTERACTION_CREATE with the fields of d
// (type, data, channel_id, guild_id, member or user) plus a fresh id, token,
// application_id and version; it returns the id and token.
func (b *Bot) InteractionCreate(d map[string]any) Interaction {
	b.s.mu.Lock()
	in := &interaction{bot: b, id: b.s.newIDLocked()}
	tok := "itoken." + in.id
	in.channelID, _ = d["channel_id"].(string)
	if m, ok := d["message"]; ok {
		var msg struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(marshal(m), &msg)
		in.message = msg.ID
	}
	b.s.interactions[tok] = in
	b.s.mu.Unlock()
	full := map[string]any{"id": in.id, "token": tok, "application_id": b.AppID, "version": 1}
	for k, v := range d {
		full[k] = v
	}
	b.Dispatch("INTERACTION_CREATE", full)
	return Interaction{ID: in.id, Token: tok}
}

// Expire ends the interaction token's 15 minutes: its webhook (the
// response, follow-ups) answers 401 Invalid Webhook Token (50027) from
// then on, as Discord does.
func (s *Server) Expire(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in := s.interactions[token]; in != nil {
		in.expired = true
	}
}

// Commands returns the application's commands registered globally (guildID
// "") or in a guild.
func (b *Bot) Commands(guildID string) []*discordgo.ApplicationCommand {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return slices.Clone(b.s.commands[b.AppID+"/"+guildID])
}

// Invocation is a person using one of the application's commands where
// Discord's client offers it.
type Invocation struct {
	Name string                           // the command's
	Type discordgo.ApplicationCommandType // 0: a chat input (slash) command
	// Context is where: a guild channel, the DM with the bot, or another
	// private channel (a DM between people, a group DM).
	Context   discordgo.InteractionContextType
	GuildID   string // in the Guild context
	ChannelID string
	User      *discordgo.User
	// Permissions are the member's in the channel, in a guild.
	Permissions int64
	// GuildInstall and UserInstall are the installs that authorize the
	// command: the app added to the guild, or to User's account.
	GuildInstall, UserInstall bool
	// Data is merged into the interaction's data: options, target_id,
	// resolved.
	Data map[string]any
}

// ErrNotOffered is Invoke's error for a command Discord's client would not
// offer there.
var ErrNotOffered = errors.New("fakediscord: Discord would not offer the command there")

// Invoke dispatches INTERACTION_CREATE for the registered command in.Name,
// with the context and authorizing_integration_owners Discord sends, if
// Discord would offer it: a global command in a context of its contexts
// (all when unset), through an install of its integration_types (guild
// install when unset), to a guild member with its
// default_member_permissions (or Administrator) where the guild install
// authorizes it; a guild command only in its guild, through the guild
// install.
func (b *Bot) Invoke(in Invocation) (Interaction, error) {
	if in.Type == 0 {
		in.Type = discordgo.ChatApplicationCommand
	}
	cmd := b.offered(in)
	if cmd == nil {
		return Interaction{}, fmt.Errorf("%w: %q (type %d) in context %d, guild install %v, user install %v", ErrNotOffered, in.Name, in.Type, in.Context, in.GuildInstall, in.UserInstall)
	}
	owners := map[string]string{}
	if in.GuildInstall {
		owners["0"] = in.GuildID
		if in.Context != discordgo.InteractionContextGuild {
			owners["0"] = "0" // the bot's DM: "0", as Discord sends it
		}
	}
	if in.UserInstall {
		owners["1"] = in.User.ID
	}
	data := map[string]any{"id": cmd.ID, "name": cmd.Name, "type": cmd.Type}
	for k, v := range in.Data {
		data[k] = v
	}
	d := map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": in.ChannelID, "data": data,
		"context": in.Context, "authorizing_integration_owners": owners,
	}
	if in.Context == discordgo.InteractionContextGuild {
		d["guild_id"] = in.GuildID
		d["member"] = map[string]any{"user": in.User, "roles": []string{}, "permissions": strconv.FormatInt(in.Permissions, 10)}
	} else {
		d["user"] = in.User
	}
	return b.InteractionCreate(d), nil
}

// offered returns the command in would use, or nil when Discord's client
// would not offer it.
func (b *Bot) offered(in Invocation) *discordgo.ApplicationCommand {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	find := func(scope string) *discordgo.ApplicationCommand {
		for _, c := range b.s.commands[b.AppID+"/"+scope] {
			if c.Name == in.Name && c.Type == in.Type {
				return c
			}
		}
		return nil
	}
	allowedPerms := func(c *discordgo.ApplicationCommand) bool {
		need := c.DefaultMemberPermissions
		return need == nil || in.Permissions&discordgo.PermissionAdministrator != 0 || in.Permissions&*need == *need
	}
	if in.Context == discordgo.InteractionContextGuild && in.GuildInstall {
		if c := find(in.GuildID); c != nil {
			if !allowedPerms(c) {
				return nil
			}
			return c
		}
	}
	c := find("")
	if c == nil {
		return nil
	}
	contexts := []discordgo.InteractionContextType{discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM, discordgo.InteractionContextPrivateChannel}
	if c.Contexts != nil {
		contexts = *c.Contexts
	}
	types := []discordgo.ApplicationIntegrationType{discordgo.ApplicationIntegrationGuildInstall}
	if c.IntegrationTypes != nil {
		types = *c.IntegrationTypes
	}
	if !slices.Contains(contexts, in.Context) {
		return nil
	}
	// The bot's DM counts as the guild install's; a private channel is
	// reached through the user install only.
	byGuild := in.GuildInstall && in.Context != discordgo.InteractionContextPrivateChannel && slices.Contains(types, discordgo.ApplicationIntegrationGuildInstall)
	byUser := in.UserInstall && slices.Contains(types, discordgo.ApplicationIntegrationUserInstall)
	if byGuild && in.Context == discordgo.InteractionContextGuild {
		byGuild = allowedPerms(c)
	}
	if byGuild || byUser {
		return c
	}
	return nil
}

// Original returns the @original response message of an interaction.
func (s *Server) Original(token string) (discordgo.Message, bool) {
	s.mu.Lock()
	in := s.interactions[token]
	s.mu.Unlock()
	if in == nil || in.original == "" {
		return discordgo.Message{}, false
	}
	return s.Message(in.original)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "fakediscord speaks encoding=json only", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.conns.Add(1)
	s.mu.Unlock()
	defer s.conns.Done()
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.live[ws] = struct{}{}
	s.mu.Unlock()
	c := &gwConn{ws: ws}
	var bot *Bot
	defer func() {
		s.mu.Lock()
		delete(s.live, ws)
		if bot != nil && bot.conn == c {
			bot.conn = nil
		}
		s.notifyLocked()
		s.mu.Unlock()
		ws.Close()
	}()
	hello := map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()}
	if err := c.write(frame{Op: 10, Data: marshal(hello)}, false); err != nil {
		return
	}
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f frame
		if err := json.Unmarshal(msg, &f); err != nil {
			c.close(4002, "Error while decoding payload.")
			return
		}
		switch f.Op {
		case 1:
			if err := c.write(frame{Op: 11}, false); err != nil {
				return
			}
		case 2:
			var id Identify
			if err := json.Unmarshal(f.Data, &id); err != nil {
				c.close(4002, "Error while decoding payload.")
				return
			}
			if bot = s.identify(c, id); bot == nil {
				return
			}
		case 6:
			var res struct {
				Token     string `json:"token"`
				SessionID string `json:"session_id"`
				Seq       int64  `json:"seq"`
			}
			if err := json.Unmarshal(f.Data, &res); err != nil {
				c.close(4002, "Error while decoding payload.")
				return
			}
			bot = s.resume(c, res.Token, res.SessionID, res.Seq)
		}
	}
}

// identify answers IDENTIFY with READY, or closes the connection with 4004
// (unknown token) or 4014 (Message Content intent not allowed), returning nil.
func (s *Server) identify(c *gwConn, id Identify) *Bot {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	bot := s.bots[strings.TrimPrefix(id.Token, "Bot ")]
	if bot == nil {
		c.close(CloseAuthenticationFailed, "Authentication failed.")
		return nil
	}
	bot.identifies = append(bot.identifies, id)
	if bot.denyContent && id.Intents&discordgo.IntentMessageContent != 0 {
		c.close(CloseDisallowedIntents, "Disallowed intent(s).")
		return nil
	}
	if sh := id.Shard; sh != nil && (sh[1] < 1 || sh[0] < 0 || sh[0] >= sh[1] || (bot.shardCount > 1 && sh[1] != bot.shardCount)) {
		c.close(CloseInvalidShard, "Invalid shard.")
		return nil
	}
	if bot.shardCount > 1 {
		if id.Shard == nil {
			c.close(CloseShardingRequired, "Sharding required.")
			return nil
		}
		bot = bot.shardLocked(id.Shard[0])
	}
	if bot.conn != nil && bot.conn != c {
		bot.conn.ws.Close()
	}
	bot.conn = c
	bot.content = id.Intents&discordgo.IntentMessageContent != 0
	bot.sessionID = "session." + s.newIDLocked()
	bot.seq = 1
	bot.events = nil
	bot.sessions++
	ready := map[string]any{
		"v": 9, "session_id": bot.sessionID, "user": bot.user(),
		"application":        map[string]any{"id": bot.AppID, "flags": bot.flags},
		"guilds":             []any{},
		"private_channels":   []any{},
		"resume_gateway_url": s.GatewayURL(),
	}
	if id.Shard != nil {
		ready["shard"] = id.Shard
	}
	_ = c.write(frame{Op: 0, Type: "READY", Seq: bot.seq, Data: marshal(ready)}, id.Compress)
	return bot
}

// resume replays the events after seq and sends RESUMED, or answers op 9
// when the session is unknown.
func (s *Server) resume(c *gwConn, token, sessionID string, seq int64) *Bot {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	bot := s.bots[strings.TrimPrefix(token, "Bot ")]
	if bot != nil {
		for _, sh := range bot.shards {
			if sh.sessionID == sessionID {
				bot = sh
			}
		}
	}
	if bot == nil || bot.sessionID == "" || bot.sessionID != sessionID {
		_ = c.write(frame{Op: 9, Data: marshal(false)}, false)
		return nil
	}
	if bot.conn != nil && bot.conn != c {
		bot.conn.ws.Close()
	}
	bot.conn = c
	for _, f := range bot.events {
		if f.Seq > seq {
			_ = c.write(f, false)
		}
	}
	bot.seq++
	bot.resumes++
	bot.sessions++
	_ = c.write(frame{Op: 0, Type: "RESUMED", Seq: bot.seq, Data: marshal(map[string]any{})}, false)
	return bot
}
