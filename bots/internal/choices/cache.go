// Package choices is what the chat adapters share of the settings a
// workspace's or guild's admins choose (internal/store's Settings), as
// opposed to the operator's (internal/config): the table of those settings
// and the parsing of the values admins type (table.go), a cache that reads
// them through to the store, bounded and skipped for a while after a
// failure so that an event never waits on a database that is down, and
// the per-user rates they set (rate.go).
package choices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/store"
)

// Store keeps the settings each workspace or guild chose; internal/store's
// Store is one.
type Store interface {
	// Settings returns what a workspace chose: the zero Settings when
	// nothing.
	Settings(ctx context.Context, platform, workspace string) (store.Settings, error)
	SaveSettings(ctx context.Context, platform, workspace string, s store.Settings) error
}

// Timings of the Cache.
const (
	CacheTTL    = time.Minute
	FailedTTL   = 10 * time.Second // after a failed read, the operator's settings this long
	ReadTimeout = 2 * time.Second  // bounds a read, where events are handled
	SaveTimeout = 5 * time.Second
)

// Cache reads the workspaces' settings through to a Store, keeping each
// for CacheTTL. The reads happen where events are handled, so a store that
// fails is not asked again for FailedTTL: meanwhile a workspace keeps what
// was last read (the operator's settings when nothing was), and the
// failure is logged once each time.
type Cache struct {
	store    Store
	platform string
	noun     string // "guild", "workspace": for the log
	now      func() time.Time
	log      *slog.Logger
	memory   bool

	mu        sync.Mutex
	entries   map[string]cached
	downUntil time.Time
}

type cached struct {
	st      store.Settings
	expires time.Time
}

// NewCache returns a Cache of platform's settings in st; with st nil they
// are kept in memory, until the process stops. noun names a workspace of
// the platform in the log ("guild").
func NewCache(st Store, platform, noun string, now func() time.Time, log *slog.Logger) *Cache {
	c := &Cache{store: st, platform: platform, noun: noun, now: now, log: log, entries: make(map[string]cached)}
	if st == nil {
		c.store, c.memory = &memory{m: make(map[string]store.Settings)}, true
	}
	return c
}

// InMemory reports whether the settings last only until the process stops
// (no store was given).
func (c *Cache) InMemory() bool { return c.memory }

// Get returns the settings of workspace id, as last read: the zero
// Settings when the store could not be read.
func (c *Cache) Get(ctx context.Context, id string) store.Settings {
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[id]
	down := now.Before(c.downUntil)
	c.mu.Unlock()
	if ok && now.Before(e.expires) || down {
		return e.st
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	st, err := c.store.Settings(ctx, c.platform, id)
	if err != nil {
		c.log.Warn("reading a "+c.noun+"'s settings; the operator's apply meanwhile", c.noun, id, "retry_in", FailedTTL, "err", err)
		c.mu.Lock()
		c.downUntil = now.Add(FailedTTL)
		c.mu.Unlock()
		return e.st
	}
	c.put(id, st, now.Add(CacheTTL))
	return st
}

// put caches a workspace's settings, and drops the expired entries, so the
// map holds the workspaces in use.
func (c *Cache) put(id string, st store.Settings, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !c.now().Before(e.expires) {
			delete(c.entries, k)
		}
	}
	c.entries[id] = cached{st: st, expires: expires}
}

// Fresh reads a workspace's settings from the store, for a change to
// start from what is stored, not from a cache or a failed read's default.
func (c *Cache) Fresh(ctx context.Context, id string) (store.Settings, error) {
	ctx, cancel := context.WithTimeout(ctx, SaveTimeout)
	defer cancel()
	st, err := c.store.Settings(ctx, c.platform, id)
	if err != nil {
		return store.Settings{}, err
	}
	c.put(id, st, c.now().Add(CacheTTL))
	return st, nil
}

// Save stores a workspace's settings; the next read sees them.
func (c *Cache) Save(ctx context.Context, id string, st store.Settings) error {
	ctx, cancel := context.WithTimeout(ctx, SaveTimeout)
	defer cancel()
	if err := c.store.SaveSettings(ctx, c.platform, id, st); err != nil {
		return err
	}
	c.put(id, st, c.now().Add(CacheTTL))
	return nil
}

// memory keeps the settings in memory, for a bot given no store.
type memory struct {
	mu sync.Mutex
	m  map[string]store.Settings
}

func (m *memory) Settings(_ context.Context, platform, id string) (store.Settings, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[platform+":"+id], nil
}

func (m *memory) SaveSettings(_ context.Context, platform, id string, st store.Settings) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[platform+":"+id] = st
	return nil
}

// ParseWindow reads an edit window: a Go duration, 0, off or never.
func ParseWindow(v string) (time.Duration, error) {
	if v == "0" || strings.EqualFold(v, "off") || strings.EqualFold(v, "never") {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.New("not a duration")
	}
	return d, nil
}

// WindowText is an edit window as admins type it: 5m, 1h30m, never.
func WindowText(d time.Duration) string {
	if d <= 0 {
		return "never"
	}
	return formatting.SettingDuration(d)
}

// Source is where a setting's value comes from, for the settings'
// answer: chosen by the workspace, or the default.
func Source(chosen bool) string {
	if chosen {
		return "set here"
	}
	return "the default"
}

// Subset reports whether every element of a is in b.
func Subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// ParseChannels reads channel mentions or ids, separated by commas or
// spaces, each matching ref (whose two groups are a mention's id and a
// bare id), without repeats. With allowed (the operator's list, the
// variable env) set, each must be one of them. reset names, for the
// messages, the value that goes back to the operator's channels.
func ParseChannels(v string, ref *regexp.Regexp, allowed []string, env, reset string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		m := ref.FindStringSubmatch(f)
		if m == nil {
			return nil, fmt.Errorf("%q is not a channel: mention channels (#name) or give their ids, or %s", f, reset)
		}
		id := m[1] + m[2]
		if len(allowed) > 0 && !slices.Contains(allowed, id) {
			return nil, fmt.Errorf("<#%s> is not one of the channels this runblock's operator allows (%s)", id, env)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no channel given: mention channels (#name) or give their ids, or %s", reset)
	}
	return out, nil
}
