// Package storetest gives tests real databases for internal/store: a SQLite
// file in a temporary directory, and a PostgreSQL server of their own.
//
// Postgres starts a throwaway cluster (initdb, then pg_ctl on a unix
// socket in a temporary directory, stopped by t.Cleanup) from Debian's
// postgresql package (/usr/lib/postgresql/N/bin), as the user nobody when
// the test runs as root, which PostgreSQL refuses to run as. With
// RUNBLOCK_TEST_POSTGRES set to a URL, it uses that server instead. Where
// neither is possible the test skips saying so, except under CI=true,
// where it fails: CI installs PostgreSQL.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// SQLite returns the location of a fresh SQLite file under t.TempDir().
func SQLite(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "runblock.db")
}

// Cluster is a PostgreSQL server for a test.
type Cluster struct {
	url     string // to its maintenance database
	dbs     atomic.Int64
	stop    func() // nil for RUNBLOCK_TEST_POSTGRES's server
	stopped atomic.Bool
}

// Postgres returns a PostgreSQL server for t: RUNBLOCK_TEST_POSTGRES's, or
// a cluster of its own, stopped when t ends.
func Postgres(t testing.TB) *Cluster {
	t.Helper()
	if u := os.Getenv("RUNBLOCK_TEST_POSTGRES"); u != "" {
		return &Cluster{url: u}
	}
	bin := binDir()
	if bin == "" {
		unavailable(t, "no PostgreSQL server: install Debian's postgresql package (initdb in /usr/lib/postgresql/N/bin) or set RUNBLOCK_TEST_POSTGRES to a server's URL")
	}
	// PostgreSQL refuses to run as root: run it as nobody, in a
	// directory of its own (t.TempDir()'s parent is private to root).
	var as []string
	dir, err := os.MkdirTemp("", "runblock-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			unavailable(t, "running as root and there is no user nobody to run PostgreSQL as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			unavailable(t, "running as root without setpriv (util-linux) to run PostgreSQL as nobody")
		}
		as = []string{setpriv, "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "--"}
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) {
		t.Helper()
		argv := append(append(slices.Clone(as), filepath.Join(bin, name)), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("initdb", "-D", data, "-U", "runblock", "--auth=trust", "--no-sync", "-E", "UTF8")
	run("pg_ctl", "start", "-w", "-D", data, "-l", filepath.Join(dir, "log"),
		"-o", "-k "+dir+" -c listen_addresses='' -c fsync=off -c full_page_writes=off")
	var once sync.Once
	stop := func() { once.Do(func() { run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", data) }) }
	t.Cleanup(stop)
	return &Cluster{url: "postgres://runblock@/postgres?sslmode=disable&host=" + url.QueryEscape(dir), stop: stop}
}

// binDir is the newest of Debian's PostgreSQL server directories, if any.
func binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return va - vb
	})
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Dir(dirs[len(dirs)-1])
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Stop stops the server now, for a test of a store whose server went
// away (its databases go with it). A server of RUNBLOCK_TEST_POSTGRES is
// not the test's to stop: the test skips.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if c.stop == nil {
		t.Skip("RUNBLOCK_TEST_POSTGRES names a server this test may not stop")
	}
	c.stopped.Store(true)
	c.stop()
}

// NewDB creates a fresh database on the cluster and returns its URL; it is
// dropped when t ends.
func (c *Cluster) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("runblock_test_%d_%d", os.Getpid(), c.dbs.Add(1))
	admin, err := sql.Open("pgx", c.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		t.Fatalf("creating a test database on %s: %v", redacted(c.url), err)
	}
	t.Cleanup(func() {
		if c.stopped.Load() {
			_ = admin.Close()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping the test database %s: %v", name, err)
		}
		_ = admin.Close()
	})
	u, err := url.Parse(c.url)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func redacted(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the server"
	}
	return u.Redacted()
}
