package choices

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/runblock/runblock/executor"
)

// Held is the Runner the answer flow submits to on a platform whose
// workspaces (guilds) may choose a per-user rate lower than the operator's
// (RUNBLOCK_USER_RATE, which the scheduler enforces everywhere): it holds
// each user to their workspace's own rate before Next takes the job.
type Held struct {
	Next      executor.Submitter
	Rates     *UserRates
	Settings  *Cache
	Workspace func(user string) string // of a user key, "" for none (a DM)
	Burst     int
}

// Submit holds the user to their workspace's rate, then submits to Next.
func (h Held) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	if err := h.Rates.Hold(ctx, h.Settings, h.Workspace(job.User), job.User, h.Burst); err != nil {
		return executor.Result{}, err
	}
	return h.Next.Submit(ctx, job)
}

// UserRates holds a limiter per user of a workspace with its own rate
// (below the operator's RUNBLOCK_USER_RATE, which the scheduler enforces); the
// limiters that are full again are dropped now and then, so the map holds
// the users who ran lately.
type UserRates struct {
	now   func() time.Time
	where string // "server", "workspace": for the answer

	mu        sync.Mutex
	limiters  map[string]*rate.Limiter
	nextSweep int
}

// minSweep is the map size below which full limiters are not looked for.
const minSweep = 1024

// NewUserRates returns empty UserRates; where names a workspace of the
// platform in the answer to a run over the rate ("server").
func NewUserRates(now func() time.Time, where string) *UserRates {
	return &UserRates{now: now, where: where, limiters: make(map[string]*rate.Limiter), nextSweep: minSweep}
}

// Hold spends one run of user's at the per-user rate workspace chose (its
// Settings.UserRate, read through c), if it chose one; workspace "" (a
// DM) has none.
func (u *UserRates) Hold(ctx context.Context, c *Cache, workspace, user string, burst int) error {
	if workspace == "" {
		return nil
	}
	if r := c.Get(ctx, workspace).UserRate; r > 0 {
		return u.Take(user, r, burst)
	}
	return nil
}

// UserRateLine is the per-user rate's line of the settings' answer: the
// rate that applies (chosen, the workspace's own, when it chose one; else
// operator's), where it comes from, and the operator's bound.
func UserRateLine(chosen, operator float64) string {
	rate, bound := RateText(operator), ""
	if chosen > 0 {
		rate = RateText(chosen)
	}
	if operator > 0 {
		bound = "; at most " + RateText(operator)
	}
	return fmt.Sprintf("• Per-user rate: %s (%s%s)\n", rate, Source(chosen > 0), bound)
}

// Take spends one run of user's at perSecond (burst at least 1), or says
// when to try again.
func (u *UserRates) Take(user string, perSecond float64, burst int) error {
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
		e := executor.Errorf(executor.ErrRateLimited, "too many snippets in this %s, try again in %s", u.where, max(time.Second, wait.Round(time.Second)))
		e.RetryAfter = wait
		return e
	}
	return nil
}

// ParseRate reads a rate such as 5/min, 1/s or 30/h, in runs a second.
func ParseRate(v string) (float64, error) {
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

// RateText writes a rate in runs a minute (or an hour, when under one).
func RateText(perSecond float64) string {
	if perSecond <= 0 {
		return "unlimited"
	}
	if m := perSecond * 60; m >= 1 {
		return strconv.FormatFloat(math.Round(m*100)/100, 'f', -1, 64) + "/min"
	}
	return strconv.FormatFloat(math.Round(perSecond*3600*100)/100, 'f', -1, 64) + "/h"
}
