package discord

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/choices"
	"github.com/runblock/runblock/internal/store"
)

// A guild's admins (members with Manage Server) choose some of the bot's
// settings for their server with /runblock settings: the channels it runs
// code in, the prefix, the run reaction, the edit window and the per-user
// rate, within the operator's bounds (DISCORD_CHANNELS, when set, is the
// widest channel list; DISCORD_EDIT_WINDOW the longest window,
// RUNBLOCK_USER_RATE the highest rate). They are kept in a
// SettingsStore and cached here, so that a message does not wait on the
// database.

// SettingsStore keeps the settings each guild chose; internal/store's
// Store is one.
type SettingsStore = choices.Store

// The /runblock command and its settings subcommand's options.
const (
	CommandRunblock = "runblock"
	subSettings     = "settings"
	optChannels     = "channels"
	optPrefix       = "prefix"
	optReaction     = "reaction"
	optEditWindow   = "edit_window"
	optUserRate     = "user_rate"
)

// manageServer is the permission /runblock settings needs; Administrator
// implies it.
const manageServer = discordgo.PermissionManageGuild

// settingsCommand is /runblock settings, offered by default only to
// members with Manage Server, in servers that installed the bot.
func settingsCommand(global bool) *discordgo.ApplicationCommand {
	perm := int64(manageServer)
	text := func(name, desc string) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc}
	}
	c := &discordgo.ApplicationCommand{
		Type:                     discordgo.ChatApplicationCommand,
		Name:                     CommandRunblock,
		Description:              "runblock in this server",
		DefaultMemberPermissions: &perm,
		Options: []*discordgo.ApplicationCommandOption{{
			Type:        discordgo.ApplicationCommandOptionSubCommand,
			Name:        subSettings,
			Description: "Show or change runblock's settings for this server",
			Options: []*discordgo.ApplicationCommandOption{
				text(optChannels, "Channels where code runs: #mentions or ids, or \"default\""),
				text(optPrefix, "Message prefix that runs code, such as !run, or \"default\""),
				text(optReaction, "Reaction that runs a message's code, or \"default\""),
				text(optEditWindow, "How long edits re-run, such as 5m; 0 = never; or \"default\""),
				text(optUserRate, "Runs a member may start, such as 3/min, or \"default\""),
			},
		}},
	}
	if global {
		c.Contexts = &[]discordgo.InteractionContextType{discordgo.InteractionContextGuild}
		c.IntegrationTypes = &[]discordgo.ApplicationIntegrationType{discordgo.ApplicationIntegrationGuildInstall}
	}
	return c
}

// guildConfig is what applies in one guild: the operator's settings, with
// the guild's choices.
type guildConfig struct {
	channels   []string
	prefix     string
	reaction   string
	editWindow time.Duration
}

// operatorConfig is the configuration of a guild that chose nothing.
func (b *Bot) operatorConfig() guildConfig {
	return guildConfig{channels: b.cfg.Channels, prefix: b.cfg.Prefix, reaction: b.cfg.RunReaction, editWindow: b.cfg.EditWindow}
}

// with applies a guild's settings, within the operator's bounds (checked
// again here: a store may hold what an older version allowed).
func (gc guildConfig) with(st store.Settings) guildConfig {
	if len(st.Channels) > 0 && (len(gc.channels) == 0 || choices.Subset(st.Channels, gc.channels)) {
		gc.channels = st.Channels
	}
	if st.Prefix != "" {
		gc.prefix = st.Prefix
	}
	if st.RunReaction != "" {
		gc.reaction = st.RunReaction
	}
	if st.EditWindow != nil {
		gc.editWindow = max(0, min(*st.EditWindow, gc.editWindow))
	}
	return gc
}

// guildConfig returns the configuration of guildID ("" for a DM: the
// operator's).
func (b *Bot) guildConfig(ctx context.Context, guildID string) guildConfig {
	gc := b.operatorConfig()
	if guildID == "" {
		return gc
	}
	return gc.with(b.settings.Get(ctx, guildID))
}

// Answers of /runblock settings.
const (
	settingsNotInGuild  = "Settings are per server: use `/runblock settings` in a server that has added runblock."
	settingsNoPerm      = "Only members with the **Manage Server** permission can see or change runblock's settings."
	settingsStoreFailed = "The settings could not be read or saved just now; nothing changed. Try again in a moment."
)

// settingsInteraction answers /runblock settings: the guild's settings,
// after changing those given. Every answer is ephemeral.
func (b *Bot) settingsInteraction(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction) {
	b.metricReceived()
	switch {
	case i.GuildID == "" || !guildInstalled(i):
		b.ephemeral(ctx, s, i, settingsNotInGuild)
		return
	case i.Member == nil || i.Member.Permissions&(manageServer|discordgo.PermissionAdministrator) == 0:
		// Discord offers the command to Manage Server by default, and a
		// server may narrow that; widening it does not widen this.
		b.ephemeral(ctx, s, i, settingsNoPerm)
		return
	}
	var opts []*discordgo.ApplicationCommandInteractionDataOption
	for _, o := range i.ApplicationCommandData().Options {
		if o.Name == subSettings {
			opts = o.Options
		}
	}
	st, err := b.settings.Fresh(ctx, i.GuildID)
	if err != nil {
		b.log.Error("reading a guild's settings", "guild", i.GuildID, "err", err)
		b.ephemeral(ctx, s, i, settingsStoreFailed)
		return
	}
	if len(opts) > 0 {
		next, err := b.changeSettings(st, opts)
		if err != nil {
			b.ephemeral(ctx, s, i, "Nothing changed: "+err.Error())
			return
		}
		if err := b.settings.Save(ctx, i.GuildID, next); err != nil {
			b.log.Error("saving a guild's settings", "guild", i.GuildID, "err", err)
			b.ephemeral(ctx, s, i, settingsStoreFailed)
			return
		}
		b.log.Info("guild settings changed", "guild", i.GuildID, "by", interactionUser(i))
		st = next
	}
	b.ephemeral(ctx, s, i, b.describeSettings(st))
}

// channelRef matches a channel mention or a bare id.
var channelRef = regexp.MustCompile(`^(?:<#(\d{15,22})>|(\d{15,22}))$`)

// changeSettings applies the given options to st, within the operator's
// bounds; an error says every option that is wrong.
func (b *Bot) changeSettings(st store.Settings, opts []*discordgo.ApplicationCommandInteractionDataOption) (store.Settings, error) {
	bounds := choices.Bounds{Platform: choices.Discord, Vars: "DISCORD_", Channels: b.cfg.Channels, ChannelRef: channelRef,
		EditWindow: b.cfg.EditWindow, UserRate: b.cfg.UserRate, Reset: `"default"`}
	var errs []error
	for _, o := range opts {
		if o.Type != discordgo.ApplicationCommandOptionString {
			continue
		}
		var err error
		if st, err = choices.Change(st, o.Name, o.StringValue(), bounds); err != nil {
			errs = append(errs, err)
		}
	}
	return st, errors.Join(errs...)
}

// describeSettings is the answer of /runblock settings: what applies in
// the guild and where it comes from.
func (b *Bot) describeSettings(st store.Settings) string {
	gc := b.operatorConfig().with(st)
	from := choices.Source
	channels := "every channel"
	if len(gc.channels) > 0 {
		refs := make([]string, len(gc.channels))
		for i, c := range gc.channels {
			refs[i] = "<#" + c + ">"
		}
		channels = strings.Join(refs, ", ")
	}
	var w strings.Builder
	w.WriteString("**runblock settings for this server**\n")
	fmt.Fprintf(&w, "• Channels: %s (%s)\n", channels, from(len(st.Channels) > 0))
	fmt.Fprintf(&w, "• Prefix: `%s` (%s)", gc.prefix, from(st.Prefix != ""))
	if !b.Access().MessageContent {
		w.WriteString(": off, as runblock lacks the Message Content intent; mention it instead")
	}
	w.WriteString("\n")
	fmt.Fprintf(&w, "• Run reaction: %s (%s)\n", gc.reaction, from(st.RunReaction != ""))
	if b.cfg.EditWindow <= 0 {
		w.WriteString("• Edit window: never (edits do not re-run on this runblock)\n")
	} else {
		fmt.Fprintf(&w, "• Edit window: %s (%s; at most %s)\n", choices.WindowText(gc.editWindow), from(st.EditWindow != nil), choices.WindowText(b.cfg.EditWindow))
	}
	w.WriteString(choices.UserRateLine(st.UserRate, b.cfg.UserRate))
	w.WriteString("Change one with `/runblock settings` and its option; \"default\" goes back to the default.")
	return w.String()
}
