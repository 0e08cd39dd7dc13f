// Package discord is the Discord adapter of runblock.
package discord

// STUB — replaced by the discord helper. Signatures are the contract main.go wires against.

import (
	"context"
	"log/slog"
	"time"

	"github.com/runblock/runblock/formatting"

	"github.com/runblock/runblock/executor"
)

// Runner is what the adapter needs of the scheduler.
type Runner interface {
	Submit(ctx context.Context, job executor.Job) (executor.Result, error)
}

// Metrics receives the adapter's observations; platform is "discord".
type Metrics interface {
	MessageReceived(platform string)
	MessageReplied(platform string)
	Reconnected(platform string)
}

// Bot owns the Discord connection.
type Bot struct{}

// New returns a Bot; it does not connect.
func New(cfg Config, runner Runner, logger *slog.Logger) *Bot { panic("stub") }

// Open connects and fails fast on bad credentials.
func (b *Bot) Open(ctx context.Context) error { panic("stub") }

// Close stops taking new messages, waits for in-flight replies until ctx ends, and disconnects.
func (b *Bot) Close(ctx context.Context) error { panic("stub") }

// Ready reports whether the connection is up.
func (b *Bot) Ready() bool { return false }

// Config configures the Discord adapter.
type Config struct {
	Token       string        // DISCORD_BOT_TOKEN
	Channels    []string      // DISCORD_CHANNELS: channel ids where any Python block runs
	Prefix      string        // DISCORD_PREFIX, default "!run"
	GuildID     string        // DISCORD_GUILD_ID: register commands per guild
	RunReaction string        // DISCORD_RUN_REACTION, default "▶️"
	EditWindow  time.Duration // DISCORD_EDIT_WINDOW, default 10m
	Render      formatting.RenderOptions
	Metrics     Metrics // nil: none
}
