package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/store"
	"github.com/runblock/runblock/internal/store/storetest"
)

// TestDiscordGuildSettingsGoToTheStore: with RUNBLOCK_STORE set, what a
// guild chooses with /runblock settings is kept in that store.
func TestDiscordGuildSettingsGoToTheStore(t *testing.T) {
	fd := fakediscord.New(fakediscord.Options{HeartbeatInterval: 200 * time.Millisecond})
	t.Cleanup(fd.Close)
	fbot := fd.NewBot("runblock")
	loc := storetest.SQLite(t)
	cfg := defaultConfig(t, config.Env{"DISCORD_BOT_TOKEN": fbot.Token, "DISCORD_API_URL": fd.URL(), "RUNBLOCK_STORE": loc})
	m := &Main{Config: cfg, Runner: runnerFunc(func(context.Context, executor.Request) (executor.Result, error) { return executor.Result{}, nil })}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	guild := fd.NewID()
	in, err := fbot.Invoke(fakediscord.Invocation{Name: discord.CommandRunblock, Context: discordgo.InteractionContextGuild, GuildID: guild, ChannelID: fd.NewID(),
		User: &discordgo.User{ID: fd.NewID()}, GuildInstall: true, Permissions: discordgo.PermissionManageGuild,
		Data: map[string]any{"options": []any{map[string]any{"name": "settings", "type": discordgo.ApplicationCommandOptionSubCommand,
			"options": []any{map[string]any{"name": "prefix", "type": discordgo.ApplicationCommandOptionString, "value": "?py"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fd.WaitRequest(ctx, fakediscord.Match("POST", "/interactions/"+in.ID+"/"+in.Token+"/callback")); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := store.ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, l, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if got, err := st.Settings(ctx, "discord", guild); err != nil || got.Prefix != "?py" {
		t.Fatalf("stored %+v %v", got, err)
	}
}

// TestReadyzSaysWhenTheStoreIsDown: a bot whose store stops answering is
// not ready (503, "store": false), as its events would get 503.
func TestReadyzSaysWhenTheStoreIsDown(t *testing.T) {
	fd := fakediscord.New(fakediscord.Options{HeartbeatInterval: 200 * time.Millisecond})
	t.Cleanup(fd.Close)
	fbot := fd.NewBot("runblock")
	cfg := defaultConfig(t, config.Env{"DISCORD_BOT_TOKEN": fbot.Token, "DISCORD_API_URL": fd.URL(),
		"RUNBLOCK_STORE": storetest.SQLite(t), "RUNBLOCK_HTTP_ADDR": "127.0.0.1:0"})
	m := &Main{Config: cfg, Runner: runnerFunc(func(context.Context, executor.Request) (executor.Result, error) { return executor.Result{}, nil })}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	readyz := func() (int, httpserver.Readiness) {
		t.Helper()
		resp, err := http.Get("http://" + m.http.Addr() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rd httpserver.Readiness
		if err := json.NewDecoder(resp.Body).Decode(&rd); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, rd
	}
	for {
		status, rd := readyz()
		if status == http.StatusOK {
			if rd.Store == nil || !*rd.Store {
				t.Fatalf("ready without saying the store answers: %+v", rd)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never ready: %d %+v", status, rd)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := m.store.Close(); err != nil {
		t.Fatal(err)
	}
	if status, rd := readyz(); status != http.StatusServiceUnavailable || rd.Ready || rd.Store == nil || *rd.Store {
		t.Fatalf("with the store closed: %d %+v", status, rd)
	}
}
