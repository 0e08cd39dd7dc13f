package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

// migrations are the schema's versions, in order; Open applies those a
// database has not seen, in one transaction, and records each in
// schema_migrations. A released migration is never edited: a change is a
// new one. The SQL is what SQLite and PostgreSQL both take: times are
// Unix milliseconds, booleans 0 or 1, tokens sealed text.
var migrations = []string{
	1: `
CREATE TABLE meta (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE slack_installations (
	install_key       TEXT PRIMARY KEY,
	enterprise_id     TEXT NOT NULL,
	team_id           TEXT NOT NULL,
	is_enterprise     INTEGER NOT NULL,
	bot_token         TEXT NOT NULL,
	bot_user_id       TEXT NOT NULL,
	bot_id            TEXT NOT NULL,
	scopes            TEXT NOT NULL,
	refresh_token     TEXT NOT NULL,
	expires_at        BIGINT NOT NULL,
	installer_user_id TEXT NOT NULL,
	installed_at      BIGINT NOT NULL,
	problem           TEXT NOT NULL
);
CREATE TABLE workspace_settings (
	platform  TEXT NOT NULL,
	workspace TEXT NOT NULL,
	settings  TEXT NOT NULL,
	PRIMARY KEY (platform, workspace)
);
CREATE TABLE oauth_states (
	state      TEXT PRIMARY KEY,
	browser    TEXT NOT NULL,
	expires_at BIGINT NOT NULL
);
CREATE TABLE seen_events (
	id         TEXT PRIMARY KEY,
	expires_at BIGINT NOT NULL
);
CREATE INDEX seen_events_expiry ON seen_events (expires_at);
`,
	// The install flow's states are signed, not stored (bots/slack), so
	// that anonymous requests cannot grow a table.
	2: `DROP TABLE oauth_states;`,
}

// migrationLock is the PostgreSQL advisory lock that serializes the
// migrations of replicas starting together.
const migrationLock = 0x72756e626c6f636b // "runblock"

// pruneEvery is how many FirstSeen calls go between deletions of expired
// event ids.
const pruneEvery = 256

// sqlStore is the Store of both backends; they differ in the driver and in
// how a query writes its parameters.
type sqlStore struct {
	db       *sql.DB
	postgres bool
	key      *Key
	now      func() time.Time
	seen     atomic.Uint64
}

func openSQL(ctx context.Context, loc Location, opts Options) (*sqlStore, error) {
	s := &sqlStore{key: opts.Key, now: opts.Now, postgres: loc.Driver == "postgres"}
	var err error
	switch loc.Driver {
	case "sqlite":
		dir := filepath.Dir(loc.Path)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("the directory %s does not exist", dir)
		}
		if err := createPrivate(loc.Path); err != nil {
			return nil, err
		}
		// WAL lets readers go on while one writes; a writer waits for
		// another up to busy_timeout; transactions take the write lock
		// at BEGIN, so that two never deadlock upgrading theirs.
		s.db, err = sql.Open("sqlite", "file:"+loc.Path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	case "postgres":
		s.db, err = sql.Open("pgx", loc.URL)
	default:
		return nil, fmt.Errorf("unknown driver %q", loc.Driver)
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.PingContext(ctx); err != nil {
		_ = s.db.Close()
		return nil, fmt.Errorf("cannot connect: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	if err := s.checkKey(ctx); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	return s, nil
}

// createPrivate creates the SQLite file path, if it does not exist, readable
// by its owner only whatever the umask: SQLite gives its -wal and -shm
// files the database file's mode. Only the tokens inside are encrypted.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return f.Close()
}

// q rewrites a query's ? parameters as PostgreSQL's $1, $2, ...
func (s *sqlStore) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *sqlStore) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return fmt.Errorf("migrating: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&have); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	if int(have.Int64) > len(migrations)-1 {
		return fmt.Errorf("the database is at schema version %d, newer than this runblock's %d: run a newer runblock", have.Int64, len(migrations)-1)
	}
	for v := int(have.Int64) + 1; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"), v, s.now().UnixMilli()); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	return nil
}

// keyCheck is the meta row holding a value sealed with the store's key: a
// key that does not open it is the wrong one.
const (
	keyCheck      = "key_check"
	keyCheckPlain = "runblock"
)

// checkKey makes sure the key opens the store's tokens: the first key a
// store sees seals its check value; a later key must open it. Without a
// key, a store that holds tokens does not open.
func (s *sqlStore) checkKey(ctx context.Context) error {
	if s.key == nil {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM slack_installations").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: the store holds the tokens of %d installations", ErrNoKey, n)
		}
		return nil
	}
	if _, err := s.db.ExecContext(ctx, s.q("INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING"),
		keyCheck, s.key.seal(keyCheckPlain, "meta/"+keyCheck)); err != nil {
		return err
	}
	var sealed string
	if err := s.db.QueryRowContext(ctx, s.q("SELECT value FROM meta WHERE name = ?"), keyCheck).Scan(&sealed); err != nil {
		return err
	}
	if plain, err := s.key.open(sealed, "meta/"+keyCheck); err != nil || plain != keyCheckPlain {
		return ErrWrongKey
	}
	return nil
}

func (s *sqlStore) Close() error { return s.db.Close() }

func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func (s *sqlStore) SaveInstallation(ctx context.Context, inst Installation) error {
	if s.key == nil {
		return ErrNoKey
	}
	k := inst.Key()
	_, err := s.db.ExecContext(ctx, s.q(`
INSERT INTO slack_installations (install_key, enterprise_id, team_id, is_enterprise, bot_token, bot_user_id, bot_id,
	scopes, refresh_token, expires_at, installer_user_id, installed_at, problem)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (install_key) DO UPDATE SET enterprise_id = excluded.enterprise_id, team_id = excluded.team_id,
	is_enterprise = excluded.is_enterprise, bot_token = excluded.bot_token, bot_user_id = excluded.bot_user_id,
	bot_id = excluded.bot_id, scopes = excluded.scopes, refresh_token = excluded.refresh_token,
	expires_at = excluded.expires_at, installer_user_id = excluded.installer_user_id,
	installed_at = excluded.installed_at, problem = excluded.problem`),
		k, inst.EnterpriseID, inst.TeamID, b2i(inst.IsEnterpriseInstall),
		s.key.seal(inst.BotToken, k+"/bot_token"), inst.BotUserID, inst.BotID, strings.Join(inst.Scopes, ","),
		s.key.seal(inst.RefreshToken, k+"/refresh_token"), millis(inst.ExpiresAt), inst.InstallerUserID,
		millis(inst.InstalledAt), inst.Problem)
	if err != nil {
		return fmt.Errorf("store: saving an installation: %w", err)
	}
	return nil
}

func (s *sqlStore) Installation(ctx context.Context, enterpriseID, teamID string) (Installation, error) {
	if s.key == nil {
		return Installation{}, ErrNoKey
	}
	var (
		inst                   Installation
		k, bot, refresh, scope string
		isEnt                  int
		expires, installed     int64
	)
	err := s.db.QueryRowContext(ctx, s.q(`
SELECT install_key, enterprise_id, team_id, is_enterprise, bot_token, bot_user_id, bot_id, scopes, refresh_token,
	expires_at, installer_user_id, installed_at, problem
FROM slack_installations WHERE install_key IN (?, ?) ORDER BY is_enterprise LIMIT 1`),
		"T:"+teamID, "E:"+enterpriseID).Scan(&k, &inst.EnterpriseID, &inst.TeamID, &isEnt, &bot, &inst.BotUserID, &inst.BotID,
		&scope, &refresh, &expires, &inst.InstallerUserID, &installed, &inst.Problem)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Installation{}, ErrNotFound
	case err != nil:
		return Installation{}, fmt.Errorf("store: reading an installation: %w", err)
	}
	inst.IsEnterpriseInstall = isEnt != 0
	if scope != "" {
		inst.Scopes = strings.Split(scope, ",")
	}
	inst.ExpiresAt, inst.InstalledAt = fromMillis(expires), fromMillis(installed)
	if inst.BotToken, err = s.key.open(bot, k+"/bot_token"); err != nil {
		return Installation{}, err
	}
	if inst.RefreshToken, err = s.key.open(refresh, k+"/refresh_token"); err != nil {
		return Installation{}, err
	}
	return inst, nil
}

func (s *sqlStore) DeleteInstallation(ctx context.Context, key string) error {
	if _, err := s.db.ExecContext(ctx, s.q("DELETE FROM slack_installations WHERE install_key = ?"), key); err != nil {
		return fmt.Errorf("store: deleting an installation: %w", err)
	}
	return nil
}

func (s *sqlStore) MarkInstallation(ctx context.Context, key, problem string) error {
	if _, err := s.db.ExecContext(ctx, s.q("UPDATE slack_installations SET problem = ? WHERE install_key = ?"), problem, key); err != nil {
		return fmt.Errorf("store: marking an installation: %w", err)
	}
	return nil
}

func (s *sqlStore) Settings(ctx context.Context, platform, workspace string) (Settings, error) {
	var raw string
	err := s.db.QueryRowContext(ctx, s.q("SELECT settings FROM workspace_settings WHERE platform = ? AND workspace = ?"), platform, workspace).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Settings{}, nil
	case err != nil:
		return Settings{}, fmt.Errorf("store: reading settings: %w", err)
	}
	var st Settings
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return Settings{}, fmt.Errorf("store: reading settings of %s %s: %w", platform, workspace, err)
	}
	return st, nil
}

func (s *sqlStore) SaveSettings(ctx context.Context, platform, workspace string, st Settings) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("store: saving settings: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO workspace_settings (platform, workspace, settings) VALUES (?, ?, ?)
ON CONFLICT (platform, workspace) DO UPDATE SET settings = excluded.settings`), platform, workspace, string(raw)); err != nil {
		return fmt.Errorf("store: saving settings: %w", err)
	}
	return nil
}

func (s *sqlStore) FirstSeen(ctx context.Context, id string, expires time.Time) (bool, error) {
	now := s.now().UnixMilli()
	if s.seen.Add(1)%pruneEvery == 0 {
		if _, err := s.db.ExecContext(ctx, s.q("DELETE FROM seen_events WHERE expires_at <= ?"), now); err != nil {
			return false, fmt.Errorf("store: pruning events: %w", err)
		}
	}
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO seen_events (id, expires_at) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at WHERE seen_events.expires_at <= ?`), id, expires.UnixMilli(), now)
	if err != nil {
		return false, fmt.Errorf("store: recording an event: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: recording an event: %w", err)
	}
	return n == 1, nil
}
