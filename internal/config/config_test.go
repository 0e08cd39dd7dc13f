package config

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/store"
)

const (
	testBotToken = "xoxb-1111-2222-SECRETBOT"
	testAppToken = "xapp-1-A111-3333-SECRETAPP"
	testSigning  = "8f14e45fceea167a5a36dedd4bea2543"
	testClientID = "1111111111.2222222222"
	testSecret   = "SECRETclient0secret0aaaaaaaaaaaa"
	testStoreKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	testDiscord  = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GabcDE.SECRETDISCORDxxxxxxxxxxxxxxxxxxxxxxxx"
)

func TestParseConfigDefaults(t *testing.T) {
	c, err := Parse(Env{}, All)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"timeout", c.Executor.Timeout, 5 * time.Second},
		{"memory", c.Executor.MemoryBytes, int64(256 << 20)},
		{"max output", c.Executor.MaxOutputBytes, int64(1 << 20)},
		{"max code", c.Executor.MaxCodeBytes, int64(1 << 20)},
		{"allow unisolated", c.Executor.AllowUnisolated, false},
		{"max files", c.Executor.MaxFiles, 10},
		{"max files bytes", c.Executor.MaxFilesBytes, int64(8 << 20)},
		{"pool", c.Executor.Pool, runtime.NumCPU()},
		{"fork server", c.Executor.DisableForkServer, false},
		{"sessions", c.Sessions.Disabled, false},
		{"session idle", c.Sessions.Idle, 15 * time.Minute},
		{"session max", c.Sessions.MaxLive, 256},
		{"session memory", c.Sessions.MemoryBytes, int64(1 << 30)},
		{"concurrency", c.Scheduler.Concurrency, runtime.NumCPU()},
		{"queue", c.Scheduler.QueueSize, 100},
		{"user rate", c.Scheduler.UserRate, 5.0 / 60},
		{"user burst", c.Scheduler.UserBurst, 5},
		{"user max jobs", c.Scheduler.MaxPerUser, 1},
		{"slack reaction", c.Slack.RunReaction, "arrow_forward"},
		{"slack edit window", c.Slack.EditWindow, 10 * time.Minute},
		{"discord prefix", c.Discord.Prefix, "!run"},
		{"discord reaction", c.Discord.RunReaction, "▶️"},
		{"discord edit window", c.Discord.EditWindow, 10 * time.Minute},
		{"discord shard", c.Discord.ShardID, 0},
		{"discord shards", c.Discord.ShardCount, 1},
		{"discord api url", c.Discord.APIURL, ""},
		{"slack api url", c.Slack.APIURL, ""},
		{"http", c.HTTPAddr, ""},
		{"drain", c.DrainTimeout, 20 * time.Second},
		{"log level", c.LogLevel, slog.LevelInfo},
		{"log format", c.LogFormat, "text"},
		{"reply lines", c.Render.MaxLines, 15},
		{"reply chars", c.Render.MaxChars, 1500},
		{"slack render", c.Slack.Render, c.Render},
		{"slack", c.SlackEnabled(), false},
		{"discord", c.DiscordEnabled(), false},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestParseConfigValues(t *testing.T) {
	tests := []struct {
		name  string
		env   Env
		check func(Config) bool
	}{
		{"timeout ms", Env{"RUNBLOCK_TIMEOUT": "1500ms"}, func(c Config) bool { return c.Executor.Timeout == 1500*time.Millisecond }},
		{"memory", Env{"RUNBLOCK_MEMORY": "512MiB"}, func(c Config) bool { return c.Executor.MemoryBytes == 512<<20 }},
		{"memory bare MiB", Env{"RUNBLOCK_MEMORY": "512"}, func(c Config) bool { return c.Executor.MemoryBytes == 512<<20 }},
		{"memory old name", Env{"RUNBLOCK_MEMORY_MB": "512"}, func(c Config) bool { return c.Executor.MemoryBytes == 512<<20 }},
		{"memory old name with unit", Env{"RUNBLOCK_MEMORY_MB": "1GiB"}, func(c Config) bool { return c.Executor.MemoryBytes == 1<<30 }},
		{"memory new name wins", Env{"RUNBLOCK_MEMORY": "300MiB", "RUNBLOCK_MEMORY_MB": "512"}, func(c Config) bool { return c.Executor.MemoryBytes == 300<<20 }},
		{"python on PATH", Env{"RUNBLOCK_PYTHON": "python3"}, func(c Config) bool { return c.Executor.Python == "python3" }},
		{"pool capped by default", Env{"RUNBLOCK_CONCURRENCY": "500"}, func(c Config) bool { return c.Executor.Pool == MaxPool }},
		{"output bytes plain", Env{"RUNBLOCK_MAX_OUTPUT_BYTES": "4096"}, func(c Config) bool { return c.Executor.MaxOutputBytes == 4096 }},
		{"code bytes unit", Env{"RUNBLOCK_MAX_CODE_BYTES": "2MiB"}, func(c Config) bool { return c.Executor.MaxCodeBytes == 2<<20 }},
		{"allow unisolated", Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}, func(c Config) bool { return c.Executor.AllowUnisolated }},
		{"allow unisolated yes", Env{"RUNBLOCK_ALLOW_UNISOLATED": "Yes"}, func(c Config) bool { return c.Executor.AllowUnisolated }},
		{"pool follows concurrency", Env{"RUNBLOCK_CONCURRENCY": "7"}, func(c Config) bool { return c.Executor.Pool == 7 && c.Scheduler.Concurrency == 7 }},
		{"pool off", Env{"RUNBLOCK_POOL": "0"}, func(c Config) bool { return c.Executor.Pool == 0 }},
		{"max files", Env{"RUNBLOCK_MAX_FILES": "4", "RUNBLOCK_MAX_FILES_BYTES": "2MiB"}, func(c Config) bool {
			return c.Executor.MaxFiles == 4 && c.Executor.MaxFilesBytes == 2<<20
		}},
		{"no files back", Env{"RUNBLOCK_MAX_FILES": "0"}, func(c Config) bool { return c.Executor.MaxFiles < 0 }},
		{"preload", Env{"RUNBLOCK_PRELOAD": " numpy, matplotlib.pyplot ,"}, func(c Config) bool {
			return slices.Equal(c.Executor.Preload.Modules, []string{"numpy", "matplotlib.pyplot"}) && !c.Executor.Preload.Auto
		}},
		{"preload auto by default", Env{}, func(c Config) bool {
			return c.Executor.Preload.Auto && slices.Equal(c.Executor.Preload.Modules, sandbox.DefaultPreload.Modules)
		}},
		{"preload auto", Env{"RUNBLOCK_PRELOAD": "Auto"}, func(c Config) bool { return c.Executor.Preload.Auto }},
		{"preload off", Env{"RUNBLOCK_PRELOAD": "off"}, func(c Config) bool {
			return !c.Executor.Preload.Auto && len(c.Executor.Preload.Modules) == 0
		}},
		{"fork server off", Env{"RUNBLOCK_FORKSERVER": "off"}, func(c Config) bool { return c.Executor.DisableForkServer }},
		{"fork server 0", Env{"RUNBLOCK_FORKSERVER": "0"}, func(c Config) bool { return c.Executor.DisableForkServer }},
		{"fork server on", Env{"RUNBLOCK_FORKSERVER": "ON"}, func(c Config) bool { return !c.Executor.DisableForkServer }},
		{"sessions off", Env{"RUNBLOCK_SESSIONS": "off"}, func(c Config) bool { return c.Sessions.Disabled }},
		{"sessions", Env{"RUNBLOCK_SESSION_IDLE": "2m", "RUNBLOCK_SESSION_MAX": "5", "RUNBLOCK_SESSION_MEMORY": "512"}, func(c Config) bool {
			return c.Sessions.Idle == 2*time.Minute && c.Sessions.MaxLive == 5 && c.Sessions.MemoryBytes == 512<<20
		}},
		{"rate per second", Env{"RUNBLOCK_USER_RATE": "2/s"}, func(c Config) bool { return c.Scheduler.UserRate == 2 }},
		{"rate per hour", Env{"RUNBLOCK_USER_RATE": "36/h"}, func(c Config) bool { return c.Scheduler.UserRate == 0.01 }},
		{"rate per minute spaced", Env{"RUNBLOCK_USER_RATE": " 30 / minute "}, func(c Config) bool { return c.Scheduler.UserRate == 0.5 }},
		{"rate off", Env{"RUNBLOCK_USER_RATE": "OFF"}, func(c Config) bool { return c.Scheduler.UserRate == 0 }},
		{"burst", Env{"RUNBLOCK_USER_BURST": "10"}, func(c Config) bool { return c.Scheduler.UserBurst == 10 }},
		{"max jobs", Env{"RUNBLOCK_USER_MAX_JOBS": "3"}, func(c Config) bool { return c.Scheduler.MaxPerUser == 3 }},
		{"slack socket mode", Env{"SLACK_BOT_TOKEN": testBotToken, "SLACK_APP_TOKEN": testAppToken}, func(c Config) bool {
			return c.SlackEnabled() && c.Slack.BotToken == testBotToken && c.Slack.AppToken == testAppToken
		}},
		{"slack events api", Env{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSigning, "RUNBLOCK_HTTP_ADDR": ":8080"}, func(c Config) bool {
			return c.Slack.SigningSecret == testSigning && c.HTTPAddr == ":8080"
		}},
		{"slack distributed, store by default", distributed(nil), func(c Config) bool {
			return c.SlackEnabled() && c.Slack.ClientID == testClientID && c.Store == DefaultDistributionStore && c.StoreKey == testStoreKey &&
				len(c.Notes) == 1 && strings.Contains(c.Notes[0], "RUNBLOCK_STORE")
		}},
		{"slack distributed on postgres", distributed(Env{"RUNBLOCK_STORE": "postgres://runblock:SECRETpw@db:5432/runblock"}), func(c Config) bool {
			// The password is redacted from the log, the rest of the URL shown.
			return c.Store == "postgres://runblock:SECRETpw@db:5432/runblock" && slices.Contains(c.Secrets(), "SECRETpw") && !slices.Contains(c.Secrets(), c.Store)
		}},
		{"no store by default", Env{}, func(c Config) bool { return c.Store == "" && !c.SlackEnabled() }},
		{"slack channels", Env{"SLACK_CHANNELS": "C1, C2,,C3 "}, func(c Config) bool { return slices.Equal(c.Slack.Channels, []string{"C1", "C2", "C3"}) }},
		{"slack reaction colons", Env{"SLACK_RUN_REACTION": ":rocket:"}, func(c Config) bool { return c.Slack.RunReaction == "rocket" }},
		{"slack edit window off", Env{"SLACK_EDIT_WINDOW": "0s"}, func(c Config) bool { return c.Slack.EditWindow == 0 }},
		{"discord edit window off", Env{"DISCORD_EDIT_WINDOW": "0s"}, func(c Config) bool { return c.Discord.EditWindow == 0 }},
		{"discord.py's token name", Env{"DISCORD_TOKEN": testDiscord}, func(c Config) bool {
			return c.Discord.Token == testDiscord && len(c.Warnings) == 0 && len(c.Notes) == 1 && strings.Contains(c.Notes[0], "DISCORD_BOT_TOKEN")
		}},
		{"discord", Env{"DISCORD_BOT_TOKEN": testDiscord, "DISCORD_GUILD_ID": "123456789012345678", "DISCORD_PREFIX": "?py"}, func(c Config) bool {
			return c.DiscordEnabled() && c.Discord.GuildID == "123456789012345678" && c.Discord.Prefix == "?py"
		}},
		{"discord Bot prefix stripped", Env{"DISCORD_BOT_TOKEN": "Bot " + testDiscord}, func(c Config) bool { return c.Discord.Token == testDiscord }},
		{"discord channels", Env{"DISCORD_CHANNELS": "1,2"}, func(c Config) bool { return slices.Equal(c.Discord.Channels, []string{"1", "2"}) }},
		{"govslack", Env{"SLACK_API_URL": "https://slack-gov.com/api/"}, func(c Config) bool { return c.Slack.APIURL == "https://slack-gov.com/api/" }},
		{"slack api url gets its slash", Env{"SLACK_API_URL": "http://egress:3128/slack/api"}, func(c Config) bool { return c.Slack.APIURL == "http://egress:3128/slack/api/" }},
		{"discord rest proxy", Env{"DISCORD_API_URL": "http://discord-proxy:8080"}, func(c Config) bool { return c.Discord.APIURL == "http://discord-proxy:8080/" }},
		{"discord shard", Env{"DISCORD_SHARD_ID": "2", "DISCORD_SHARD_COUNT": "3"}, func(c Config) bool {
			return c.Discord.ShardID == 2 && c.Discord.ShardCount == 3 && len(c.Notes) == 0
		}},
		{"discord shard from a pod name", Env{"DISCORD_SHARD_ID": "runblock-bot-1", "DISCORD_SHARD_COUNT": "2"}, func(c Config) bool {
			return c.Discord.ShardID == 1 && c.Discord.ShardCount == 2 && len(c.Notes) == 1 && strings.Contains(c.Notes[0], "shard 1")
		}},
		{"discord shard 0 of 1", Env{"DISCORD_SHARD_ID": "0"}, func(c Config) bool { return c.Discord.ShardID == 0 && c.Discord.ShardCount == 1 }},
		{"http", Env{"RUNBLOCK_HTTP_ADDR": "127.0.0.1:9090"}, func(c Config) bool { return c.HTTPAddr == "127.0.0.1:9090" }},
		{"drain", Env{"RUNBLOCK_DRAIN_TIMEOUT": "1m"}, func(c Config) bool { return c.DrainTimeout == time.Minute }},
		{"log level", Env{"LOG_LEVEL": "DEBUG"}, func(c Config) bool { return c.LogLevel == slog.LevelDebug && c.LogLevelSet }},
		{"log level default", Env{}, func(c Config) bool { return c.LogLevel == slog.LevelInfo && !c.LogLevelSet }},
		{"log format", Env{"LOG_FORMAT": "JSON"}, func(c Config) bool { return c.LogFormat == "json" }},
		{"render", Env{"RUNBLOCK_REPLY_LINES": "5", "RUNBLOCK_REPLY_CHARS": "300"}, func(c Config) bool {
			return c.Render.MaxLines == 5 && c.Render.MaxChars == 300 && reflect.DeepEqual(c.Discord.Render, c.Render)
		}},
		{"empty means default", Env{"RUNBLOCK_TIMEOUT": "", "SLACK_BOT_TOKEN": ""}, func(c Config) bool {
			return c.Executor.Timeout == 5*time.Second && !c.SlackEnabled()
		}},
		{"unknown variable warned", Env{"RUNBLOCK_TIMEOT": "3s", "HOME": "/root"}, func(c Config) bool {
			return slices.Equal(c.Warnings, []string{"RUNBLOCK_TIMEOT"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.env, All)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("unexpected config: %+v", c)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     Env
		varName string
		fix     string // a part of the message that tells the fix
	}{
		{"duration garbage", Env{"RUNBLOCK_TIMEOUT": "soon"}, "RUNBLOCK_TIMEOUT", "5s"},
		{"duration without unit", Env{"RUNBLOCK_TIMEOUT": "5"}, "RUNBLOCK_TIMEOUT", "5s"},
		{"duration negative", Env{"RUNBLOCK_TIMEOUT": "-1s"}, "RUNBLOCK_TIMEOUT", "positive"},
		{"duration zero", Env{"RUNBLOCK_DRAIN_TIMEOUT": "0s"}, "RUNBLOCK_DRAIN_TIMEOUT", "positive"},
		{"edit window negative", Env{"DISCORD_EDIT_WINDOW": "-5m"}, "DISCORD_EDIT_WINDOW", "positive"},
		{"memory negative", Env{"RUNBLOCK_MEMORY_MB": "-256"}, "RUNBLOCK_MEMORY_MB", "64 MiB"},
		{"memory zero", Env{"RUNBLOCK_MEMORY": "0"}, "RUNBLOCK_MEMORY", "64 MiB"},
		{"memory too small to start python", Env{"RUNBLOCK_MEMORY_MB": "8"}, "RUNBLOCK_MEMORY_MB", "256MiB"},
		{"memory bad unit", Env{"RUNBLOCK_MEMORY": "256 parsecs"}, "RUNBLOCK_MEMORY", "256MiB"},
		{"python missing", Env{"RUNBLOCK_PYTHON": "/nonexistent/python3"}, "RUNBLOCK_PYTHON", "/usr/bin/python3"},
		{"python not on PATH", Env{"RUNBLOCK_PYTHON": "python2.1-nowhere"}, "RUNBLOCK_PYTHON", "/usr/bin/python3"},
		{"python a directory", Env{"RUNBLOCK_PYTHON": "/usr/bin"}, "RUNBLOCK_PYTHON", "executable"},
		{"pool huge", Env{"RUNBLOCK_POOL": "100000"}, "RUNBLOCK_POOL", "at most 64"},
		{"concurrency huge", Env{"RUNBLOCK_CONCURRENCY": "100000"}, "RUNBLOCK_CONCURRENCY", "at most"},
		{"discord.py's token name checked", Env{"DISCORD_TOKEN": "SECRETnodots"}, "DISCORD_TOKEN", "developer portal"},
		{"output bytes bad unit", Env{"RUNBLOCK_MAX_OUTPUT_BYTES": "1 parsec"}, "RUNBLOCK_MAX_OUTPUT_BYTES", "1MiB"},
		{"code bytes negative", Env{"RUNBLOCK_MAX_CODE_BYTES": "-1"}, "RUNBLOCK_MAX_CODE_BYTES", "positive"},
		{"bool", Env{"RUNBLOCK_ALLOW_UNISOLATED": "maybe"}, "RUNBLOCK_ALLOW_UNISOLATED", "1 or 0"},
		{"fork server word", Env{"RUNBLOCK_FORKSERVER": "sometimes"}, "RUNBLOCK_FORKSERVER", "not a boolean"},
		{"pool negative", Env{"RUNBLOCK_POOL": "-2"}, "RUNBLOCK_POOL", "negative"},
		{"sessions word", Env{"RUNBLOCK_SESSIONS": "sometimes"}, "RUNBLOCK_SESSIONS", "not a boolean"},
		{"session idle zero", Env{"RUNBLOCK_SESSION_IDLE": "0s"}, "RUNBLOCK_SESSION_IDLE", "positive"},
		{"session max zero", Env{"RUNBLOCK_SESSION_MAX": "0"}, "RUNBLOCK_SESSION_MAX", "at least 1"},
		{"session memory tiny", Env{"RUNBLOCK_SESSION_MEMORY": "1MiB"}, "RUNBLOCK_SESSION_MEMORY", "64 MiB"},
		{"max files huge", Env{"RUNBLOCK_MAX_FILES": "1000"}, "RUNBLOCK_MAX_FILES", "at most"},
		{"preload not a module", Env{"RUNBLOCK_PRELOAD": "numpy; import os"}, "RUNBLOCK_PRELOAD", "module name"},
		{"concurrency zero", Env{"RUNBLOCK_CONCURRENCY": "0"}, "RUNBLOCK_CONCURRENCY", "at least 1"},
		{"queue word", Env{"RUNBLOCK_QUEUE": "lots"}, "RUNBLOCK_QUEUE", "whole number"},
		{"rate without unit", Env{"RUNBLOCK_USER_RATE": "5"}, "RUNBLOCK_USER_RATE", "5/min"},
		{"rate unknown unit", Env{"RUNBLOCK_USER_RATE": "5/fortnight"}, "RUNBLOCK_USER_RATE", "5/min"},
		{"rate negative", Env{"RUNBLOCK_USER_RATE": "-5/min"}, "RUNBLOCK_USER_RATE", "positive"},
		{"burst negative", Env{"RUNBLOCK_USER_BURST": "-1"}, "RUNBLOCK_USER_BURST", "negative"},
		{"max jobs zero", Env{"RUNBLOCK_USER_MAX_JOBS": "0"}, "RUNBLOCK_USER_MAX_JOBS", "at least 1"},
		{"bot token in app token", Env{"SLACK_BOT_TOKEN": testBotToken, "SLACK_APP_TOKEN": testBotToken}, "SLACK_APP_TOKEN", "belongs in SLACK_BOT_TOKEN"},
		{"app token in bot token", Env{"SLACK_BOT_TOKEN": testAppToken, "SLACK_APP_TOKEN": testAppToken}, "SLACK_BOT_TOKEN", "belongs in SLACK_APP_TOKEN"},
		{"bot token garbage", Env{"SLACK_BOT_TOKEN": "SECRETgarbage", "SLACK_APP_TOKEN": testAppToken}, "SLACK_BOT_TOKEN", "xoxb-"},
		{"slack token with space", Env{"SLACK_BOT_TOKEN": "xoxb-SECRET tail", "SLACK_APP_TOKEN": testAppToken}, "SLACK_BOT_TOKEN", "without spaces"},
		{"slack app token without bot token", Env{"SLACK_APP_TOKEN": testAppToken}, "SLACK_BOT_TOKEN", "xoxb-"},
		{"slack bot token alone", Env{"SLACK_BOT_TOKEN": testBotToken}, "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"},
		{"signing secret without http", Env{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSigning}, "RUNBLOCK_HTTP_ADDR", ":8080"},
		{"client id with a bot token", distributed(Env{"SLACK_BOT_TOKEN": testBotToken}), "SLACK_BOT_TOKEN", "unset SLACK_BOT_TOKEN"},
		{"client id with an app token", distributed(Env{"SLACK_APP_TOKEN": testAppToken}), "SLACK_APP_TOKEN", "over the Events API"},
		{"client id without secret", distributed(Env{"SLACK_CLIENT_SECRET": ""}), "SLACK_CLIENT_SECRET", "Basic Information"},
		{"client secret without id", Env{"SLACK_CLIENT_SECRET": testSecret}, "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET"},
		{"client id without signing secret", distributed(Env{"SLACK_SIGNING_SECRET": ""}), "SLACK_SIGNING_SECRET", "events over HTTP"},
		{"client id without http", distributed(Env{"RUNBLOCK_HTTP_ADDR": ""}), "RUNBLOCK_HTTP_ADDR", "/slack/install"},
		{"client id without store key", distributed(Env{"RUNBLOCK_STORE_KEY": ""}), "RUNBLOCK_STORE_KEY", "openssl rand -hex 32"},
		{"store key too short", Env{"RUNBLOCK_STORE_KEY": "SECRETabcdef"}, "RUNBLOCK_STORE_KEY", "openssl rand -hex 32"},
		{"store unknown", Env{"RUNBLOCK_STORE": "mysql://u:SECRETpw@db/x"}, "RUNBLOCK_STORE", "sqlite:/var/lib/runblock/runblock.db"},
		{"store sqlite with options", Env{"RUNBLOCK_STORE": "sqlite:x.db?mode=ro"}, "RUNBLOCK_STORE", "needs a file path"},
		{"slack token in discord", Env{"DISCORD_BOT_TOKEN": testBotToken}, "DISCORD_BOT_TOKEN", "SLACK_BOT_TOKEN"},
		{"discord token garbage", Env{"DISCORD_BOT_TOKEN": "SECRETnodots"}, "DISCORD_BOT_TOKEN", "developer portal"},
		{"guild id", Env{"DISCORD_GUILD_ID": "my-server"}, "DISCORD_GUILD_ID", "Copy Server ID"},
		{"slack api url not a url", Env{"SLACK_API_URL": "slack-gov.com/api"}, "SLACK_API_URL", "https://slack-gov.com/api/"},
		{"slack api url with query", Env{"SLACK_API_URL": "https://slack.com/api/?x=1"}, "SLACK_API_URL", "https://slack-gov.com/api/"},
		{"discord api url scheme", Env{"DISCORD_API_URL": "ftp://proxy/"}, "DISCORD_API_URL", "http://discord-proxy:8080/"},
		{"shard id not below count", Env{"DISCORD_SHARD_ID": "2", "DISCORD_SHARD_COUNT": "2"}, "DISCORD_SHARD_ID", "0 to 1"},
		{"shard id negative", Env{"DISCORD_SHARD_ID": "-1", "DISCORD_SHARD_COUNT": "2"}, "DISCORD_SHARD_ID", "number from 0"},
		{"shard id without count", Env{"DISCORD_SHARD_ID": "1"}, "DISCORD_SHARD_ID", "DISCORD_SHARD_COUNT"},
		{"shard id a word", Env{"DISCORD_SHARD_ID": "first", "DISCORD_SHARD_COUNT": "2"}, "DISCORD_SHARD_ID", "ordinal"},
		{"shard count without id", Env{"DISCORD_SHARD_COUNT": "4"}, "DISCORD_SHARD_COUNT", "DISCORD_SHARD_ID"},
		{"shard count zero", Env{"DISCORD_SHARD_COUNT": "0"}, "DISCORD_SHARD_COUNT", "at least 1"},
		{"http addr", Env{"RUNBLOCK_HTTP_ADDR": "8080"}, "RUNBLOCK_HTTP_ADDR", ":8080"},
		{"http port", Env{"RUNBLOCK_HTTP_ADDR": ":http-ish"}, "RUNBLOCK_HTTP_ADDR", ":8080"},
		{"log level", Env{"LOG_LEVEL": "loud"}, "LOG_LEVEL", "debug, info, warn or error"},
		{"log format", Env{"LOG_FORMAT": "xml"}, "LOG_FORMAT", "text or json"},
		{"reply lines", Env{"RUNBLOCK_REPLY_LINES": "0"}, "RUNBLOCK_REPLY_LINES", "15"},
		{"reply chars", Env{"RUNBLOCK_REPLY_CHARS": "-3"}, "RUNBLOCK_REPLY_CHARS", "1500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.env, All)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *Error", err)
			}
			msg := err.Error()
			if ce.Var != tt.varName || !strings.HasPrefix(msg, tt.varName) {
				t.Errorf("error %q names %s, want %s", msg, ce.Var, tt.varName)
			}
			if !strings.Contains(msg, tt.fix) {
				t.Errorf("error %q does not say %q", msg, tt.fix)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
			for k, v := range tt.env {
				if st, _ := lookup(k); st.Secret && strings.Contains(msg, v) {
					t.Errorf("error %q shows the value of %s", msg, k)
				}
			}
		})
	}
}

func TestLoadEnvRealEnvironmentWins(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	content := "RUNBLOCK_TIMEOUT=9s\nRUNBLOCK_QUEUE=7\n# a comment\nLOG_FORMAT=\"json\"\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	env, dotenv, err := LoadEnv([]string{"RUNBLOCK_TIMEOUT=2s", "NOEQUALS"}, path)
	if err != nil {
		t.Fatal(err)
	}
	want := Env{"RUNBLOCK_TIMEOUT": "2s", "RUNBLOCK_QUEUE": "7", "LOG_FORMAT": "json"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("got %v, want %v", env, want)
	}
	if wantFile := (Dotenv{"RUNBLOCK_QUEUE": path, "LOG_FORMAT": path}); !reflect.DeepEqual(dotenv, wantFile) {
		t.Errorf("from the file: got %v, want %v", dotenv, wantFile)
	}

	env, dotenv, err = LoadEnv([]string{"A=1"}, filepath.Join(dir, "missing.env"))
	if err != nil || !reflect.DeepEqual(env, Env{"A": "1"}) || len(dotenv) != 0 {
		t.Errorf("missing .env: got %v, %v, %v", env, dotenv, err)
	}
}

// TestBadValueFromDotenvSaysSo: a bad setting read from the dotenv file
// names the file; the same value from the environment does not.
func TestBadValueFromDotenvSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("RUNBLOCK_TIMEOUT=soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		environ []string
		want    bool
	}{
		{"from the file", nil, true},
		{"from the environment", []string{"RUNBLOCK_TIMEOUT=later"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, dotenv, err := LoadEnv(tt.environ, path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(env, All)
			var ce *Error
			if !errors.As(dotenv.Explain(err), &ce) {
				t.Fatalf("Parse = %v, want a *Error", err)
			}
			if got := strings.Contains(ce.Error(), "(set in "+path+")"); got != tt.want {
				t.Errorf("error %q names the file: %v, want %v", ce, got, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		unit int64
		want int64
		ok   bool
	}{
		{"256MiB", 1 << 20, 256 << 20, true},
		{"256", 1 << 20, 256 << 20, true},
		{"1.5G", 1, 3 << 29, true},
		{"64 KiB", 1, 64 << 10, true},
		{"10b", 1 << 20, 10, true},
		{"12 bananas", 1, 0, false},
		{"MiB", 1, 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in, tt.unit)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q, %d) = %d, %v; want %d, ok=%v", tt.in, tt.unit, got, err, tt.want, tt.ok)
		}
	}
}

// TestLogsNeverShowTokens logs the start-up summary and errors that carry
// credentials, in both formats, and looks for the credentials.
func TestLogsNeverShowTokens(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			cfg, err := Parse(Env{
				"SLACK_BOT_TOKEN": testBotToken, "SLACK_APP_TOKEN": testAppToken,
				"SLACK_SIGNING_SECRET": testSigning, "RUNBLOCK_HTTP_ADDR": ":0",
				"DISCORD_BOT_TOKEN": testDiscord, "LOG_FORMAT": format, "LOG_LEVEL": "debug",
			}, All)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log := NewLogger(&buf, cfg)
			log.Info("starting runblock", "config", cfg)
			log.Error("connect failed", "err", errors.New("GET https://slack.test/api?token="+testBotToken+": 401"))
			log.Debug("header "+testDiscord, "token", testAppToken, "list", []string{testSigning})
			log.With("auth", "Bot "+testDiscord).Warn("retrying", slog.Group("g", "secret", testSigning))
			out := buf.String()
			for _, secret := range cfg.Secrets() {
				if strings.Contains(out, secret) {
					t.Errorf("log shows a credential:\n%s", out)
				}
			}
			if !strings.Contains(out, "[redacted]") || !strings.Contains(out, "slack_bot_token") {
				t.Errorf("log lost its content:\n%s", out)
			}
			if len(cfg.Secrets()) != 4 {
				t.Errorf("Secrets() = %d values, want 4", len(cfg.Secrets()))
			}
		})
	}
}

// TestLoadEnvMalformedFileHidesValues: a broken .env is reported by line,
// never by content, which may hold a token.
func TestLoadEnvMalformedFileHidesValues(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"space instead of =", "LOG_LEVEL=debug\nSLACK_BOT_TOKEN " + testBotToken + "\n", "line 2 is not a setting"},
		{"unterminated quote", "# tokens\nSLACK_BOT_TOKEN=\"" + testBotToken + "\nSLACK_APP_TOKEN=" + testAppToken + "\n", "quote opened on line 2"},
		{"no name", "LOG_LEVEL=debug\n\n=" + testBotToken + "\n", "line 3 is not a setting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".env")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadEnv(nil, path)
			if err == nil {
				t.Fatal("LoadEnv accepted a malformed file")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, "KEY=value") {
				t.Errorf("error %q does not say %q and the fix", msg, tt.want)
			}
			for _, secret := range []string{testBotToken, testAppToken, "SECRET"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q quotes the file", msg)
				}
			}
		})
	}
}

// TestJSONLogDurationsInMilliseconds: JSON logs carry durations as numbers
// of milliseconds under a key that says so; text logs keep Go's form.
func TestJSONLogDurationsInMilliseconds(t *testing.T) {
	for format, want := range map[string]string{"json": `"took_ms":1500.25`, "text": "took=1.50025s"} {
		cfg, err := Parse(Env{"LOG_FORMAT": format}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		NewLogger(&buf, cfg).Info("run", "took", 1500250*time.Microsecond)
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s log %q lacks %s", format, buf.String(), want)
		}
	}
}

// TestPartsValidateOnlyWhatACommandUses: exec and doctor read the sandbox
// settings only, so a chat setting they never use cannot stop them.
func TestPartsValidateOnlyWhatACommandUses(t *testing.T) {
	env := Env{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSigning, "RUNBLOCK_TIMEOUT": "2s"}
	if _, err := Parse(env, All); err == nil {
		t.Fatal("serve accepted a signing secret without RUNBLOCK_HTTP_ADDR")
	}
	c, err := Parse(env, Sandbox)
	if err != nil {
		t.Fatalf("the sandbox part refused a chat setting: %v", err)
	}
	if c.Executor.Timeout != 2*time.Second || c.SlackEnabled() {
		t.Errorf("sandbox part: %+v", c)
	}
	if _, err := Parse(Env{"RUNBLOCK_TIMEOUT": "soon"}, Chat); err != nil {
		t.Errorf("the chat part read a sandbox setting: %v", err)
	}
}

func TestRemoteSettings(t *testing.T) {
	const tok = "0123456789abcdef0123"
	c, err := Parse(Env{"RUNBLOCK_EXECUTOR_URL": "http://a:8080, http://b:8080/", "RUNBLOCK_API_TOKEN": tok + ",second-token-123456"}, All)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ExecutorURLs) != 2 || c.ExecutorURLs[0] != "http://a:8080" || len(c.APITokens) != 2 || c.APITokens[0] != tok {
		t.Errorf("parsed %q and %d tokens", c.ExecutorURLs, len(c.APITokens))
	}
	if !slices.Contains(c.Secrets(), tok) {
		t.Error("the API token is not among the secrets to redact")
	}
	for _, tc := range []struct{ name, value, want string }{
		{"RUNBLOCK_EXECUTOR_URL", "runblock-executor:8080", "not a base URL"},
		{"RUNBLOCK_EXECUTOR_URL", "http://a:8080/v1/run", "not a base URL"},
		{"RUNBLOCK_API_TOKEN", "tok3n", "too short"},
		{"RUNBLOCK_API_TOKEN", "a-token-long-enough but spaced", "too short or contains whitespace"},
	} {
		_, err := Parse(Env{tc.name: tc.value}, All)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v, want %q", tc.name, tc.value, err, tc.want)
			continue
		}
		if tc.name == "RUNBLOCK_API_TOKEN" && strings.Contains(err.Error(), tc.value) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	// Commands that do not use them do not read them.
	if _, err := Parse(Env{"RUNBLOCK_API_TOKEN": "short"}, Sandbox); err != nil {
		t.Errorf("exec's settings refused over RUNBLOCK_API_TOKEN: %v", err)
	}
}

// TestSettingsTable checks each row of the table: a unique name and field,
// a one-sentence doc that explains its aliases, a default its own kind
// reads into its field's type, and commands that read its section.
func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	fields := map[any]string{}
	var c Config
	for i := range Sections {
		sec := &Sections[i]
		readers := commandsOf(sec, &Setting{})
		for j := range sec.Settings {
			s := &sec.Settings[j]
			for _, n := range append([]string{s.Name}, s.Aliases...) {
				if seen[n] {
					t.Errorf("%s is in the table twice", n)
				}
				seen[n] = true
			}
			if s.Doc == "" || strings.Contains(s.Doc, "\n") || !strings.HasSuffix(s.Doc, ".") {
				t.Errorf("%s: the doc must be one line and a sentence: %q", s.Name, s.Doc)
			}
			for _, a := range s.Aliases {
				if !strings.Contains(s.Doc, a) {
					t.Errorf("%s: the doc does not say it also reads %s", s.Name, a)
				}
			}
			ptr := s.field(&c)
			if other, dup := fields[ptr]; dup {
				t.Errorf("%s and %s fill the same field", s.Name, other)
			}
			fields[ptr] = s.Name
			if s.Default != "" {
				p := &parser{}
				v := s.Kind.parse(p, s, s.Name, s.Default)
				if p.err != nil {
					t.Errorf("%s: the default %q does not parse: %v", s.Name, s.Default, p.err)
				} else if got, want := reflect.TypeOf(v), reflect.TypeOf(ptr).Elem(); got != want {
					t.Errorf("%s: its kind reads a %v into a %v field", s.Name, got, want)
				}
			}
			for _, cmd := range s.UsedBy {
				if !slices.Contains(readers, cmd) {
					t.Errorf("%s: used by %s, which does not read the %s section", s.Name, cmd, sec.Title)
				}
			}
		}
	}
}

// TestMemoryBareNumbers: a bare RUNBLOCK_MEMORY counts MiB, and one too
// large to be MiB (a byte count, as the execute API's memory field takes)
// is refused with a message saying how to write bytes, rather than read as
// a limit of hundreds of TiB, which is none at all.
func TestMemoryBareNumbers(t *testing.T) {
	tests := []struct {
		value string
		want  int64  // the limit, or
		err   string // a part of the refusal
	}{
		{"300000000", 0, "write 300000000B if it is bytes (about 286MiB)"},
		{"268435456", 0, "a bare number counts MiB"},
		{"65537", 0, "more than 64 GiB"},
		{"65536", 64 << 30, ""},
		{"512", 512 << 20, ""},
		{"300000000B", 300000000, ""},
		{"300000000b", 300000000, ""},
		{"99999999999999G", 0, "not a size"},
	}
	for _, name := range []string{"RUNBLOCK_MEMORY", "RUNBLOCK_MEMORY_MB"} {
		for _, tt := range tests {
			c, err := Parse(Env{name: tt.value}, Sandbox)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("%s=%s: %v", name, tt.value, err)
			case tt.err == "" && c.Executor.MemoryBytes != tt.want:
				t.Errorf("%s=%s: %d bytes, want %d", name, tt.value, c.Executor.MemoryBytes, tt.want)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), name)):
				t.Errorf("%s=%s: %v (limit %d bytes), want an error naming %s and saying %q", name, tt.value, err, c.Executor.MemoryBytes, name, tt.err)
			}
		}
	}
}

// TestSizesNeverOverflow: a size too large for a byte count is refused,
// not wrapped around into a negative or tiny limit.
func TestSizesNeverOverflow(t *testing.T) {
	for _, name := range []string{"RUNBLOCK_MAX_OUTPUT_BYTES", "RUNBLOCK_MAX_CODE_BYTES", "RUNBLOCK_MAX_FILES_BYTES", "RUNBLOCK_MEMORY"} {
		for _, v := range []string{"99999999999999999999", "99999999999G", "9223372036854775807"} {
			c, err := Parse(Env{name: v}, Sandbox)
			if err == nil {
				t.Errorf("%s=%s read as %+v", name, v, c.Executor)
			}
		}
	}
	for _, tt := range []struct {
		in   string
		unit int64
	}{{"300000000", 1 << 20}, {"70000", 1 << 20}, {"1e3", 1}, {"99999999999G", 1}} {
		if n, err := ParseSize(tt.in, tt.unit); err == nil {
			t.Errorf("ParseSize(%q, %d) = %d, want an error", tt.in, tt.unit, n)
		}
	}
}

// TestLogValueFollowsTheTable: the start-up summary has one entry per
// setting the command read, and secrets only as set or unset.
func TestLogValueFollowsTheTable(t *testing.T) {
	cfg, err := Parse(Env{"RUNBLOCK_API_TOKEN": "0123456789abcdef0123,second-token-123456", "RUNBLOCK_FORKSERVER": "off", "RUNBLOCK_MAX_FILES": "0"}, Sandbox|Remote)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range cfg.LogValue().Group() {
		got[a.Key] = a.Value.String()
	}
	want := map[string]string{"api_token": "2 set", "forkserver": "false", "max_files": "0", "timeout": "5s", "memory": "268435456", "executor_url": "[]", "log_level": "INFO"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["slack_bot_token"]; ok {
		t.Error("the summary shows a chat setting that exec and the executor do not read")
	}
	if n := len(Sections[0].Settings) + len(Sections[1].Settings) + len(Sections[6].Settings) + len(Sections[7].Settings); len(got) != n {
		t.Errorf("%d entries, want %d: %v", len(got), n, got)
	}
}

// distributed is the environment of a distributed Slack app, with over
// applied (an empty value unsets).
func distributed(over Env) Env {
	env := Env{
		"SLACK_CLIENT_ID": testClientID, "SLACK_CLIENT_SECRET": testSecret, "SLACK_SIGNING_SECRET": testSigning,
		"RUNBLOCK_HTTP_ADDR": ":8080", "RUNBLOCK_STORE_KEY": testStoreKey,
	}
	for k, v := range over {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

// TestLogShowsStoreWithoutPassword: the store's location is in the log,
// a SQLite path whole and a PostgreSQL URL without its password.
func TestLogShowsStoreWithoutPassword(t *testing.T) {
	tests := []struct {
		store, want, hidden string
	}{
		{"sqlite:/var/lib/runblock/runblock.db", "sqlite:/var/lib/runblock/runblock.db", ""},
		{"postgres://runblock:SECRETPW@db:5432/runblock", "postgres://runblock:xxxxx@db:5432/runblock", "SECRETPW"},
		{"postgres://runblock@db:5432/runblock?password=SECRETPW", "postgres://runblock@db:5432/runblock?password=[redacted]", "SECRETPW"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			cfg, err := Parse(Env{"RUNBLOCK_STORE": tt.store}, All)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log := NewLogger(&buf, cfg)
			log.Info("starting runblock", "config", cfg)
			loc, err := store.ParseLocation(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("store open", "store", loc.Redacted()) // as serve logs it
			out := buf.String()
			if strings.Count(out, tt.want) != 2 {
				t.Errorf("log does not show %s in the summary and the store line:\n%s", tt.want, out)
			}
			if tt.hidden != "" && strings.Contains(out, tt.hidden) {
				t.Errorf("log shows the password:\n%s", out)
			}
		})
	}
}
