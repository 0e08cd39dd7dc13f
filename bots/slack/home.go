package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/formatting"
)

// Limits are the operator's limits of one run, which the App Home and
// /run help show (RUNBLOCK_TIMEOUT, RUNBLOCK_MEMORY, ...); a zero field is
// left out.
type Limits struct {
	Timeout        time.Duration
	MemoryBytes    int64
	MaxOutputBytes int64
	MaxCodeBytes   int64
	MaxFiles       int
}

// helpText is what /run help answers and the App Home shows first: how to
// run code, and the limits of a run.
func (b *Bot) helpText(team string) string {
	wc := b.config(team)
	var s strings.Builder
	s.WriteString("*runblock runs Python code blocks in a sandbox and answers in the thread.*\n\n")
	s.WriteString("• Mention @runblock in a message with a ```python code block.\n")
	s.WriteString("• Send it code in a direct message: any code block runs.\n")
	s.WriteString("• `/run print('hello')` runs its text; `/run` alone opens an editor.\n")
	fmt.Fprintf(&s, "• React with :%s: to a message with code to run it, or use the *Run code* message shortcut.\n", wc.reaction)
	if wc.editWindow > 0 {
		fmt.Fprintf(&s, "• Edit your message within %s and runblock runs it again, updating its reply.\n", formatting.DurationText(wc.editWindow))
	}
	s.WriteString("• Files attached to the message are in the run's directory; files the run writes (plots too) come back in the thread.\n")
	var limits []string
	l := b.cfg.Limits
	if l.Timeout > 0 {
		limits = append(limits, formatting.DurationText(l.Timeout)+" per run")
	}
	if l.MemoryBytes > 0 {
		limits = append(limits, formatting.SizeText(l.MemoryBytes)+" of memory")
	}
	if l.MaxCodeBytes > 0 {
		limits = append(limits, formatting.SizeText(l.MaxCodeBytes)+" of code")
	}
	if l.MaxOutputBytes > 0 {
		limits = append(limits, formatting.SizeText(l.MaxOutputBytes)+" of output")
	}
	if l.MaxFiles > 0 {
		limits = append(limits, fmt.Sprintf("%d files back", l.MaxFiles))
	}
	if len(limits) > 0 {
		s.WriteString("\n*Limits:* " + strings.Join(limits, ", ") + ". No network; nothing is kept between runs.\n")
	}
	return s.String()
}

// help answers /run help, only to the user who asked.
func (b *Bot) help(ctx context.Context, src source) {
	if err := b.notify(ctx, src, b.helpText(src.team)); err != nil {
		b.log.Warn("answering /run help", "err", err)
	}
}

// onHomeOpened publishes the App Home tab for the user who opened it:
// how to run code and the limits, and the workspace's settings for its
// admins.
func (b *Bot) onHomeOpened(ws *workspace, team string, ev *slackevents.AppHomeOpenedEvent) {
	if ev.Tab != "home" || ev.User == "" {
		return
	}
	user := ev.User
	b.spawn("home", func(ctx context.Context) {
		blocks := []slack.Block{
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, b.helpText(team), false, false), nil, nil),
		}
		info, err := ws.api.GetUserInfoContext(ctx, user)
		switch {
		case errors.Is(b.gone(ws, err), answer.ErrDropped):
			return
		case err != nil:
			b.log.Warn("app home: users.info", "user", user, "err", err)
		case info.IsAdmin || info.IsOwner:
			st, err := b.settings.Fresh(ctx, team)
			text := b.settingsText(st)
			if err != nil {
				b.log.Warn("app home: reading the workspace's settings", "workspace", team, "err", err)
				text = "*Settings of this workspace*: they could not be read just now; open this tab again in a moment."
			}
			blocks = append(blocks, slack.NewDividerBlock(),
				slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil))
		}
		view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
		_, err = ws.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view})
		if err = b.gone(ws, err); err != nil && !errors.Is(err, answer.ErrDropped) {
			b.log.Warn("app home: views.publish", "user", user, "err", err)
		}
	})
}
