package discord

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

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
	if guild := guildOfUser(job.User); guild != "" {
		if r := g.b.settings.Get(ctx, guild).UserRate; r > 0 {
			if err := g.b.rates.take(job.User, r, g.b.cfg.UserBurst); err != nil {
				return executor.Result{}, err
			}
		}
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

// userRates holds a limiter per user of a guild with its own rate; the
// limiters that are full again are dropped now and then, so the map holds
// the users who ran lately.
type userRates struct {
	now func() time.Time

	mu        sync.Mutex
	limiters  map[string]*rate.Limiter
	nextSweep int
}

// minSweep is the map size below which full limiters are not looked for.
const minSweep = 1024

func newUserRates(now func() time.Time) *userRates {
	return &userRates{now: now, limiters: make(map[string]*rate.Limiter), nextSweep: minSweep}
}

// take spends one run of user's at perSecond (burst at least 1), or says
// when to try again.
func (u *userRates) take(user string, perSecond float64, burst int) error {
	now := u.now()
	burst = max(1, burst)
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.limiters) >= u.nextSweep {
		for k, l := range u.limiters {
			if l.TokensAt(now) >= float64(l.Burst()) {
				delete(u.limiters, k)
			}
		}
		u.nextSweep = max(minSweep, 2*len(u.limiters))
	}
	lim := u.limiters[user]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(perSecond), burst)
		u.limiters[user] = lim
	}
	if lim.Limit() != rate.Limit(perSecond) || lim.Burst() != burst {
		lim.SetLimitAt(now, rate.Limit(perSecond))
		lim.SetBurstAt(now, burst)
	}
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		e := executor.Errorf(executor.ErrRateLimited, "too many snippets in this server, try again in %s", max(time.Second, wait.Round(time.Second)))
		e.RetryAfter = wait
		return e
	}
	return nil
}

// parseRate reads a rate such as 5/min, 1/s or 30/h, in runs a second.
func parseRate(v string) (float64, error) {
	n, per, ok := strings.Cut(strings.ReplaceAll(v, " ", ""), "/")
	count, err := strconv.ParseFloat(n, 64)
	if !ok || err != nil || count <= 0 {
		return 0, errors.New("not a rate")
	}
	switch strings.ToLower(per) {
	case "s", "sec", "second":
		return count, nil
	case "m", "min", "minute":
		return count / 60, nil
	case "h", "hour":
		return count / 3600, nil
	}
	return 0, errors.New("not a rate")
}

// rateText writes a rate in runs a minute (or an hour, when under one).
func rateText(perSecond float64) string {
	if perSecond <= 0 {
		return "unlimited"
	}
	if m := perSecond * 60; m >= 1 {
		return strconv.FormatFloat(math.Round(m*100)/100, 'f', -1, 64) + "/min"
	}
	return strconv.FormatFloat(math.Round(perSecond*3600*100)/100, 'f', -1, 64) + "/h"
}
