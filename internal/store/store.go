// Package store keeps what runblock must remember across restarts and share
// between replicas: the Slack installations of a distributed app, the
// settings each workspace or guild chose, and the ids of events already
// answered. It has one
// interface, Store, and two backends behind it: SQLite embedded in the
// binary (modernc.org/sqlite, pure Go) for one process, and PostgreSQL
// (github.com/jackc/pgx/v5) for replicas that share it. Nothing else in
// runblock speaks SQL.
//
// Tokens are encrypted at rest (AES-256-GCM) with a Key; a store opened with
// the wrong key, or without one while it holds tokens, refuses to open.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Store is the persistent state of runblock. Its methods are safe for
// concurrent use, also by several processes sharing one database.
type Store interface {
	// SaveInstallation stores inst, replacing the installation with the
	// same key (a re-install, or rotated tokens).
	SaveInstallation(ctx context.Context, inst Installation) error
	// Installation returns the installation that answers for a workspace:
	// the team's own, else the org-wide one of its enterprise. It returns
	// ErrNotFound when there is neither.
	Installation(ctx context.Context, enterpriseID, teamID string) (Installation, error)
	// DeleteInstallation removes the installation with key (Installation.Key);
	// one that is gone already is no error.
	DeleteInstallation(ctx context.Context, key string) error
	// MarkInstallation records problem (such as "token_revoked") on the
	// installation with key, for the operator; "" clears it.
	MarkInstallation(ctx context.Context, key, problem string) error

	// Settings returns the settings a workspace or guild chose; the zero
	// Settings (the operator's defaults) when it chose none.
	Settings(ctx context.Context, platform, workspace string) (Settings, error)
	// SaveSettings stores the settings of a workspace or guild.
	SaveSettings(ctx context.Context, platform, workspace string, s Settings) error

	// FirstSeen records the event id until expires and reports whether
	// this is its first sighting: of several replicas given the same event,
	// exactly one gets true. An id whose record expired counts as new.
	FirstSeen(ctx context.Context, id string, expires time.Time) (bool, error)

	// Ping reports whether the database answers: /readyz asks it.
	Ping(ctx context.Context) error

	// Close closes the database.
	Close() error
}

// Installation is one installation of the Slack app: a workspace's, or an
// Enterprise Grid org's when IsEnterpriseInstall.
type Installation struct {
	EnterpriseID        string // "" outside Enterprise Grid
	TeamID              string // "" for an org-wide install
	IsEnterpriseInstall bool
	BotToken            string // xoxb- (xoxe.xoxb- with token rotation)
	BotUserID           string
	BotID               string
	Scopes              []string
	// RefreshToken and ExpiresAt are set when the app rotates its tokens:
	// BotToken is good until ExpiresAt, then oauth.v2.access with the
	// refresh token gives new ones.
	RefreshToken    string
	ExpiresAt       time.Time
	InstallerUserID string
	InstalledAt     time.Time
	// Problem is what went wrong with the installation while it was used
	// (MarkInstallation), such as "token_revoked"; "" when nothing did.
	Problem string
}

// Key is the installation's key: the team for a workspace install, the
// enterprise for an org-wide one.
func (i Installation) Key() string {
	if i.IsEnterpriseInstall {
		return "E:" + i.EnterpriseID
	}
	return "T:" + i.TeamID
}

// Settings are what a workspace or guild's admins may choose, within the
// bounds the operator sets in the environment. The zero value of a field
// means "the operator's default".
type Settings struct {
	// Channels, when set, are the only channels where runblock answers
	// (direct messages always work).
	Channels []string `json:"channels,omitempty"`
	// RunReaction is the emoji name that runs a message's code.
	RunReaction string `json:"run_reaction,omitempty"`
	// Prefix is the message prefix that triggers a run (Discord).
	Prefix string `json:"prefix,omitempty"`
	// Timeout is the wall-clock limit of a run, at most the operator's.
	Timeout time.Duration `json:"timeout,omitempty"`
	// EditWindow, when set, is how long after posting an edit re-runs;
	// 0 turns re-runs off.
	EditWindow *time.Duration `json:"edit_window,omitempty"`
	// Sessions, when set, turns sessions (state kept between runs) on or
	// off.
	Sessions *bool `json:"sessions,omitempty"`
	// UserRate is the runs per second a user may make, at most the
	// operator's.
	UserRate float64 `json:"user_rate,omitempty"`
}

// Errors of the store.
var (
	ErrNotFound = errors.New("store: not found")
	// ErrNoKey: tokens cannot be stored, or read, without a Key.
	ErrNoKey = errors.New("store: no encryption key")
	// ErrWrongKey: the store's tokens were encrypted with another Key.
	ErrWrongKey = errors.New("store: the key does not open the tokens in this store")
)

// Options configure Open.
type Options struct {
	// Key encrypts the tokens at rest; nil stores no tokens (Open then
	// refuses a store that holds some).
	Key *Key
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Location is where a store is: SQLite's file, or PostgreSQL's URL.
type Location struct {
	Driver string // "sqlite" or "postgres"
	Path   string // SQLite's file
	URL    string // PostgreSQL's connection URL
}

// ParseLocation reads a store's location: sqlite:PATH (sqlite://PATH too)
// or postgres://... (postgresql://...).
func ParseLocation(s string) (Location, error) {
	switch {
	case strings.HasPrefix(s, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(s, "sqlite:"), "//")
		if p == "" || strings.ContainsAny(p, "?#") {
			return Location{}, errors.New("sqlite: needs a file path, such as sqlite:/var/lib/runblock/runblock.db")
		}
		return Location{Driver: "sqlite", Path: p}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, errors.New("not a PostgreSQL URL, such as postgres://runblock:PASSWORD@db:5432/runblock")
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return Location{}, errors.New("the PostgreSQL URL names no host, such as postgres://runblock:PASSWORD@db:5432/runblock")
		}
		return Location{Driver: "postgres", URL: s}, nil
	}
	return Location{}, errors.New("unknown store: use sqlite:PATH or postgres://USER:PASSWORD@HOST/DB")
}

// Redacted is the location without a password, for the log.
func (l Location) Redacted() string {
	if l.Driver == "sqlite" {
		return "sqlite:" + l.Path
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return "postgres://[redacted]"
	}
	return u.Redacted()
}

// Open opens the store at loc, creating its tables or bringing them up to
// date; it fails when the database cannot be reached or its tokens do not
// open with opts.Key.
func Open(ctx context.Context, loc Location, opts Options) (Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db, err := openSQL(ctx, loc, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc.Redacted(), err)
	}
	return db, nil
}
