package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/store"
	"github.com/runblock/runblock/internal/store/storetest"
)

const (
	testKey  = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	otherKey = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

func key(t testing.TB, s string) *store.Key {
	t.Helper()
	k, err := store.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// clock is a settable clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time               { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration)      { c.ns.Add(int64(d)) }
func (c *clock) At(d time.Duration) time.Time { return c.Now().Add(d) }

// env is one case's database: its location and a way to open it again.
type env struct {
	t     *testing.T
	loc   store.Location
	clock *clock
}

func (e *env) open(k *store.Key) (store.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return store.Open(ctx, e.loc, store.Options{Key: k, Now: e.clock.Now})
}

func (e *env) mustOpen(k *store.Key) store.Store {
	e.t.Helper()
	s, err := e.open(k)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// backends runs fn once per backend, each case on a fresh database.
func backends(t *testing.T, fn func(t *testing.T, fresh func(t *testing.T) *env)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, func(t *testing.T) *env {
			loc, err := store.ParseLocation(storetest.SQLite(t))
			if err != nil {
				t.Fatal(err)
			}
			return &env{t: t, loc: loc, clock: newClock()}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		pg := storetest.Postgres(t)
		fn(t, func(t *testing.T) *env {
			loc, err := store.ParseLocation(pg.NewDB(t))
			if err != nil {
				t.Fatal(err)
			}
			return &env{t: t, loc: loc, clock: newClock()}
		})
	})
}

var ctx = context.Background()

func team(id, token string) store.Installation {
	return store.Installation{
		TeamID: id, BotToken: token, BotUserID: "U" + id, BotID: "B" + id,
		Scopes: []string{"chat:write", "commands"}, InstallerUserID: "UADMIN",
		InstalledAt: time.UnixMilli(1_780_000_000_000),
	}
}

func TestStore(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"an installation round-trips, and a re-install replaces it", func(t *testing.T, e *env) {
			s := e.mustOpen(key(t, testKey))
			in := team("T1", "xoxb-one")
			in.RefreshToken, in.ExpiresAt = "xoxe-1-refresh", time.UnixMilli(1_780_000_043_200_000)
			if err := s.SaveInstallation(ctx, in); err != nil {
				t.Fatal(err)
			}
			got, err := s.Installation(ctx, "", "T1")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(in) {
				t.Fatalf("got  %+v\nwant %+v", got, in)
			}
			in.BotToken, in.RefreshToken = "xoxb-rotated", "xoxe-1-next"
			if err := s.SaveInstallation(ctx, in); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Installation(ctx, "", "T1"); got.BotToken != "xoxb-rotated" || got.RefreshToken != "xoxe-1-next" {
				t.Fatalf("after re-saving: %q %q", got.BotToken, got.RefreshToken)
			}
			if _, err := s.Installation(ctx, "", "T2"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another team: %v, want ErrNotFound", err)
			}
		}},
		{"an org-wide install answers for its teams; a team's own install comes first", func(t *testing.T, e *env) {
			s := e.mustOpen(key(t, testKey))
			org := store.Installation{EnterpriseID: "E1", IsEnterpriseInstall: true, BotToken: "xoxb-org", BotUserID: "UORG"}
			if err := s.SaveInstallation(ctx, org); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Installation(ctx, "E1", "T7"); err != nil || got.BotToken != "xoxb-org" || got.Key() != "E:E1" {
				t.Fatalf("team of the org: %+v %v", got, err)
			}
			own := team("T8", "xoxb-own")
			own.EnterpriseID = "E1"
			if err := s.SaveInstallation(ctx, own); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Installation(ctx, "E1", "T8"); got.BotToken != "xoxb-own" {
				t.Fatalf("team with its own install got %q", got.BotToken)
			}
			if _, err := s.Installation(ctx, "E2", "T9"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another org: %v", err)
			}
		}},
		{"delete and mark", func(t *testing.T, e *env) {
			s := e.mustOpen(key(t, testKey))
			in := team("T1", "xoxb-one")
			if err := s.SaveInstallation(ctx, in); err != nil {
				t.Fatal(err)
			}
			if err := s.MarkInstallation(ctx, in.Key(), "token_revoked"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Installation(ctx, "", "T1"); got.Problem != "token_revoked" {
				t.Fatalf("problem %q", got.Problem)
			}
			for range 2 { // deleting twice is no error
				if err := s.DeleteInstallation(ctx, in.Key()); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Installation(ctx, "", "T1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("after delete: %v", err)
			}
		}},
		{"tokens are encrypted at rest", func(t *testing.T, e *env) {
			s := e.mustOpen(key(t, testKey))
			in := team("T1", "xoxb-secret-bot-token")
			in.RefreshToken = "xoxe-1-secret-refresh"
			if err := s.SaveInstallation(ctx, in); err != nil {
				t.Fatal(err)
			}
			raw := rawRow(t, e.loc, "SELECT bot_token || refresh_token FROM slack_installations")
			if strings.Contains(raw, "secret") || !strings.HasPrefix(raw, "v1:") {
				t.Fatalf("stored tokens are not sealed: %q", raw)
			}
		}},
		{"a wrong or missing key is refused at Open, and no token is stored without one", func(t *testing.T, e *env) {
			s := e.mustOpen(nil)
			if err := s.SaveInstallation(ctx, team("T1", "xoxb-one")); !errors.Is(err, store.ErrNoKey) {
				t.Fatalf("saving without a key: %v", err)
			}
			_ = s.Close()
			s = e.mustOpen(key(t, testKey))
			if err := s.SaveInstallation(ctx, team("T1", "xoxb-one")); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			if _, err := e.open(key(t, otherKey)); !errors.Is(err, store.ErrWrongKey) {
				t.Fatalf("another key: %v, want ErrWrongKey", err)
			}
			if _, err := e.open(nil); !errors.Is(err, store.ErrNoKey) {
				t.Fatalf("no key: %v, want ErrNoKey", err)
			}
			s = e.mustOpen(key(t, testKey))
			if got, err := s.Installation(ctx, "", "T1"); err != nil || got.BotToken != "xoxb-one" {
				t.Fatalf("the right key again: %+v %v", got, err)
			}
		}},
		{"migrations are idempotent and a newer schema is refused", func(t *testing.T, e *env) {
			for range 3 {
				s := e.mustOpen(key(t, testKey))
				if err := s.SaveSettings(ctx, "slack", "T1", store.Settings{Prefix: "!"}); err != nil {
					t.Fatal(err)
				}
				_ = s.Close()
			}
			execRaw(t, e.loc, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)")
			if _, err := e.open(key(t, testKey)); err == nil || !strings.Contains(err.Error(), "newer") {
				t.Fatalf("a newer schema: %v", err)
			}
		}},
		{"settings per platform and workspace", func(t *testing.T, e *env) {
			s := e.mustOpen(nil)
			if got, err := s.Settings(ctx, "slack", "T1"); err != nil || fmt.Sprint(got) != fmt.Sprint(store.Settings{}) {
				t.Fatalf("unset: %+v %v", got, err)
			}
			off, window := false, 2*time.Minute
			want := store.Settings{Channels: []string{"C1", "C2"}, RunReaction: "rocket", Timeout: 5 * time.Second, EditWindow: &window, Sessions: &off, UserRate: 0.5}
			if err := s.SaveSettings(ctx, "slack", "T1", want); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveSettings(ctx, "discord", "T1", store.Settings{Prefix: "?run"}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Settings(ctx, "slack", "T1")
			if err != nil || *got.EditWindow != window || *got.Sessions || got.RunReaction != "rocket" || got.Timeout != 5*time.Second || len(got.Channels) != 2 || got.UserRate != 0.5 {
				t.Fatalf("slack T1: %+v %v", got, err)
			}
			if got, _ := s.Settings(ctx, "discord", "T1"); got.Prefix != "?run" || got.RunReaction != "" {
				t.Fatalf("discord T1: %+v", got)
			}
		}},
		{"an event is first seen once until its record expires", func(t *testing.T, e *env) {
			s := e.mustOpen(nil)
			for i, want := range []bool{true, false, false} {
				if got, err := s.FirstSeen(ctx, "Ev1", e.clock.At(time.Hour)); err != nil || got != want {
					t.Fatalf("sighting %d: %v %v, want %v", i, got, err, want)
				}
			}
			e.clock.Advance(time.Hour)
			if got, _ := s.FirstSeen(ctx, "Ev1", e.clock.At(time.Hour)); !got {
				t.Fatal("an expired record still counts")
			}
			if got, _ := s.FirstSeen(ctx, "Ev2", e.clock.At(time.Hour)); !got {
				t.Fatal("another event is not new")
			}
		}},
		{"two processes on one database: each event is first seen by exactly one", func(t *testing.T, e *env) {
			a, b := e.mustOpen(nil), e.mustOpen(nil)
			const events = 40
			var firsts atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 4*events)
			for _, s := range []store.Store{a, b, a, b} {
				wg.Go(func() {
					for i := range events {
						first, err := s.FirstSeen(ctx, fmt.Sprintf("Ev%d", i), e.clock.At(time.Hour))
						if err != nil {
							errs <- err
							return
						}
						if first {
							firsts.Add(1)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if firsts.Load() != events {
				t.Fatalf("%d first sightings of %d events", firsts.Load(), events)
			}
		}},
	}
	backends(t, func(t *testing.T, fresh func(t *testing.T) *env) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
		}
	})
}

// rawRow reads one text value straight from the database.
func rawRow(t *testing.T, loc store.Location, query string) string {
	t.Helper()
	db := rawDB(t, loc)
	var v string
	if err := db.QueryRow(query).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func execRaw(t *testing.T, loc store.Location, query string) {
	t.Helper()
	if _, err := rawDB(t, loc).Exec(query); err != nil {
		t.Fatal(err)
	}
}

func rawDB(t *testing.T, loc store.Location) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", loc.URL
	if loc.Driver == "sqlite" {
		driver, dsn = "sqlite", loc.Path
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestSQLiteFilesArePrivate: the database and its -wal and -shm files are
// readable by their owner only, even under a umask that lets anyone read.
func TestSQLiteFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	loc, err := store.ParseLocation(storetest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, loc, store.Options{Key: key(t, testKey)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.SaveInstallation(ctx, team("T1", "xoxb-one")); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		st, err := os.Stat(loc.Path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(loc.Path+suffix), mode)
		}
	}
}

// TestPingFollowsTheDatabase: Ping answers while the database does, and
// fails once the PostgreSQL server stops or the SQLite database is closed,
// so that /readyz can say so.
func TestPingFollowsTheDatabase(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		pg := storetest.Postgres(t)
		loc, err := store.ParseLocation(pg.NewDB(t))
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(ctx, loc, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("a running server: %v", err)
		}
		pg.Stop(t)
		if err := s.Ping(ctx); err == nil {
			t.Fatal("Ping holds with the server stopped")
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		loc, err := store.ParseLocation(storetest.SQLite(t))
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(ctx, loc, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("an open database: %v", err)
		}
		_ = s.Close()
		if err := s.Ping(ctx); err == nil {
			t.Fatal("Ping holds with the database closed")
		}
	})
}

func TestOpenFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cases := []struct {
		loc  string
		want string
	}{
		{"sqlite:" + filepath.Join(t.TempDir(), "missing", "runblock.db"), "does not exist"},
		{"postgres://runblock:hunter2@" + closed + "/runblock?sslmode=disable&connect_timeout=5", "cannot connect"},
	}
	for _, c := range cases {
		loc, err := store.ParseLocation(c.loc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.Open(ctx, loc, store.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) = %v, want %q", loc.Redacted(), err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func TestParseLocation(t *testing.T) {
	cases := []struct {
		in, driver, redacted string
	}{
		{"sqlite:/var/lib/runblock/runblock.db", "sqlite", "sqlite:/var/lib/runblock/runblock.db"},
		{"sqlite://runblock.db", "sqlite", "sqlite:runblock.db"},
		{"postgres://runblock:hunter2@db:5432/runblock", "postgres", "postgres://runblock:xxxxx@db:5432/runblock"},
		{"postgresql://db/runblock", "postgres", "postgresql://db/runblock"},
		{"sqlite:", "", ""},
		{"sqlite:x.db?mode=ro", "", ""},
		{"postgres:///runblock", "", ""},
		{"mysql://db/runblock", "", ""},
		{"/var/lib/runblock.db", "", ""},
	}
	for _, c := range cases {
		loc, err := store.ParseLocation(c.in)
		if c.driver == "" {
			if err == nil {
				t.Errorf("%q: accepted", c.in)
			}
			continue
		}
		if err != nil || loc.Driver != c.driver || loc.Redacted() != c.redacted {
			t.Errorf("%q: %+v %q %v", c.in, loc, loc.Redacted(), err)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{testKey, "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8="} {
		if _, err := store.ParseKey(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "short", testKey[:62], testKey + "00"} {
		if _, err := store.ParseKey(s); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}
