package discord

import (
	"context"
	"strings"

	"github.com/runblock/runblock/executor"
)

// A guild may choose a per-user rate lower than the operator's
// (RUNBLOCK_USER_RATE, which the scheduler enforces everywhere): the bot
// holds its users to it before their runs reach the scheduler.

// guildRunner is the Runner the answer flow submits to: the guild's rate
// first, then the scheduler.
type guildRunner struct {
	next Runner
	b    *Bot
}

func (g guildRunner) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	if err := g.b.rates.Hold(ctx, g.b.settings, guildOfUser(job.User), job.User, g.b.cfg.UserBurst); err != nil {
		return executor.Result{}, err
	}
	return g.next.Submit(ctx, job)
}

// guildOfUser is the guild of a user key (userKey), "" for a DM.
func guildOfUser(key string) string {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] != Platform || parts[1] == "dm" {
		return ""
	}
	return parts[1]
}
