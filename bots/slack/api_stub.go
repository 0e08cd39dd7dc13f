// Package slack is the Slack adapter of runblock.
package slack

// STUB — replaced by the slack helper. Signatures are the contract main.go wires against.

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/runblock/runblock/formatting"

	"github.com/runblock/runblock/executor"
)

// Runner is what the adapter needs of the scheduler.
type Runner interface {
	Submit(ctx context.Context, job executor.Job) (executor.Result, error)
}

// Metrics receives the adapter's observations; platform is "slack".
type Metrics interface {
	MessageReceived(platform string)
	MessageReplied(platform string)
	Reconnected(platform string)
}

// Bot owns the Slack connection.
type Bot struct{}

// New returns a Bot; it does not connect.
func New(cfg Config, runner Runner, logger *slog.Logger) *Bot { panic("stub") }

// Open connects and fails fast on bad credentials.
func (b *Bot) Open(ctx context.Context) error { panic("stub") }

// Close stops taking new messages, waits for in-flight replies until ctx ends, and disconnects.
func (b *Bot) Close(ctx context.Context) error { panic("stub") }

// Ready reports whether the connection is up.
func (b *Bot) Ready() bool { return false }

// Config configures the Slack adapter.
type Config struct {
	BotToken      string        // SLACK_BOT_TOKEN, xoxb-
	AppToken      string        // SLACK_APP_TOKEN, xapp-: Socket Mode
	SigningSecret string        // SLACK_SIGNING_SECRET: Events API over HTTP (see Handler)
	Channels      []string      // SLACK_CHANNELS: channel ids where any Python block runs
	RunReaction   string        // SLACK_RUN_REACTION, default "arrow_forward"
	EditWindow    time.Duration // SLACK_EDIT_WINDOW, default 10m
	APIURL        string        // test hook: slack.OptionAPIURL, must end in "/"
	Render        formatting.RenderOptions
	Metrics       Metrics // nil: none
}

// Handler serves the Events API and interactivity endpoints (mounted by main
// under /slack/ on RUNBLOCK_HTTP_ADDR when SigningSecret is set).
func (b *Bot) Handler() http.Handler { panic("stub") }
