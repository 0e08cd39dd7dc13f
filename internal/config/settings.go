package config

import (
	"strconv"
	"time"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/slack"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/formatting"
)

// This file is the one place a setting is declared. Parse reads and checks
// every row through its kind, LogValue and Secrets read the rows back out of
// a Config, and .env.example and README.md's settings table are generated
// from them (go test ./internal/config -run 'TestEnvExample|TestReadme'
// -update rewrites both; without -update the tests fail when they differ).
// Adding a setting is one row here plus the field it fills.

// Part is a group of settings; a command parses and validates only the
// parts it uses, so that `runblock exec` does not refuse to run over a chat
// setting it never reads.
type Part uint8

// The parts of the configuration. Logging is always read.
const (
	Sandbox   Part = 1 << iota // the interpreter, limits and pool
	Scheduler                  // concurrency, queue and per-user limits
	Chat                       // Slack, Discord and the reply's shape
	HTTP                       // the HTTP listener and the drain
	Remote                     // the execute API's tokens and the remote executors
	All       = Sandbox | Scheduler | Chat | HTTP | Remote
)

// Defaults that belong to no package but this one.
const (
	DefaultDrainTimeout = 20 * time.Second
	// MinMemoryBytes is the smallest memory limit an interpreter starts in.
	MinMemoryBytes = 64 << 20
	// MaxPool bounds the pre-started sandboxes (each holds about 16 MiB).
	MaxPool = 64
	// MaxFiles bounds RUNBLOCK_MAX_FILES.
	MaxFiles = 100
	// MaxConcurrency and MaxQueue bound what one process can sensibly run
	// and hold.
	MaxConcurrency = 1024
	MaxQueue       = 100_000
	// MaxSessions bounds RUNBLOCK_SESSION_MAX: each live session holds a
	// process, a uid and a work dir.
	MaxSessions = 4096
)

// sessionCommands are the commands that keep or continue sessions.
var sessionCommands = []string{"serve", "doctor", "executor", "mcp"}

// Setting is one environment variable runblock reads.
type Setting struct {
	Name string
	// Aliases are other names read when Name is unset: an old name, or
	// another program's name for the same thing.
	Aliases []string
	Kind    Kind
	// Default is the value when the variable is unset, written as a user
	// would write it (it is parsed like one); "" leaves the field zero or
	// to the rule DefaultDoc describes.
	Default string
	// DefaultDoc is the default in words, where it is computed.
	DefaultDoc string
	// Min and Max bound a whole number (Max 0: no upper bound).
	Min, Max int
	// Secret values are never printed: not in errors, not in the log.
	Secret bool
	// UsedBy narrows the commands that use it, where fewer use it than read
	// its section.
	UsedBy []string
	// Doc is what it does, one line.
	Doc string
	// field points at the part of a Config the value goes into; its type is
	// the type Kind parses to.
	field func(*Config) any
}

// Section is a group of settings: a heading in .env.example and the README,
// and a Part of the configuration that a command reads or not.
type Section struct {
	Title    string
	About    string // what the group is for, after the title
	Part     Part   // 0: read by every command
	Settings []Setting
}

// Command is a runblock command that reads settings, and the parts of the
// configuration it passes to Parse.
type Command struct {
	Name  string
	Parts Part
}

// Commands are the commands that read settings beyond logging, in the
// order the settings table names them; the command table of internal/cli
// takes each command's parts from here.
var Commands = []Command{
	{"serve", All},
	{"exec", Sandbox},
	{"doctor", Sandbox | Chat},
	{"executor", Sandbox | Scheduler | HTTP | Remote},
	{"bench", Sandbox},
	{"health", HTTP},
	{"mcp", Sandbox | Scheduler},
}

// PartsOf returns the parts of the configuration the command name reads
// (0 for a command that reads only logging).
func PartsOf(name string) Part {
	for _, c := range Commands {
		if c.Name == name {
			return c.Parts
		}
	}
	return 0
}

// Sections is every setting runblock reads, in .env.example order.
var Sections = []Section{
	{Title: "Executor", About: "how each snippet runs", Part: Sandbox, Settings: []Setting{
		{Name: "RUNBLOCK_PYTHON", Kind: python, DefaultDoc: "`python3` on PATH",
			Doc:   "Python interpreter: a path, or a name looked up on PATH.",
			field: func(c *Config) any { return &c.Executor.Python }},
		{Name: "RUNBLOCK_TIMEOUT", Kind: duration, Default: formatting.SettingDuration(sandbox.DefaultTimeout),
			Doc:   "Wall-clock limit per run.",
			field: func(c *Config) any { return &c.Executor.Timeout }},
		{Name: "RUNBLOCK_MEMORY", Aliases: []string{"RUNBLOCK_MEMORY_MB"}, Kind: memory, Default: formatSize(sandbox.DefaultMemoryBytes),
			Doc:   "Memory limit per run (RUNBLOCK_MEMORY_MB, the old name, is still read).",
			field: func(c *Config) any { return &c.Executor.MemoryBytes }},
		{Name: "RUNBLOCK_MAX_OUTPUT_BYTES", Kind: size, Default: formatSize(sandbox.DefaultMaxOutputBytes),
			Doc:   "Hard cap on a run's stdout+stderr; the run is stopped past it.",
			field: func(c *Config) any { return &c.Executor.MaxOutputBytes }},
		{Name: "RUNBLOCK_MAX_CODE_BYTES", Kind: size, Default: formatSize(sandbox.DefaultMaxCodeBytes),
			Doc:   "Largest snippet (code + stdin) accepted; the execute API counts files too.",
			field: func(c *Config) any { return &c.Executor.MaxCodeBytes }},
		{Name: "RUNBLOCK_MAX_FILES", Kind: fileCount, Default: strconv.Itoa(sandbox.DefaultMaxFiles), Max: MaxFiles,
			Doc:   "Files a snippet leaves in its work dir (plots shown with plt.show() too) come back, at most this many; the same cap bounds the files put in. 0 = none come back.",
			field: func(c *Config) any { return &c.Executor.MaxFiles }},
		{Name: "RUNBLOCK_MAX_FILES_BYTES", Kind: size, Default: formatSize(sandbox.DefaultMaxFilesBytes),
			Doc:   "The total size of the files that come back (and of those put in).",
			field: func(c *Config) any { return &c.Executor.MaxFilesBytes }},
		{Name: "RUNBLOCK_ALLOW_UNISOLATED", Kind: boolean, Default: "0",
			Doc:   "1 = allow running with the guard prelude only when no kernel isolation works. Unsafe, and logged as such.",
			field: func(c *Config) any { return &c.Executor.AllowUnisolated }},
		{Name: "RUNBLOCK_POOL", Kind: whole, DefaultDoc: "`RUNBLOCK_CONCURRENCY`, at most " + strconv.Itoa(MaxPool), Max: MaxPool,
			Doc:   "Pre-started sandboxes kept warm (each holds about 16 MiB), and one more for plots with a preload (about 15 MiB of its own); 0 turns the pool off.",
			field: func(c *Config) any { return &c.Executor.Pool }},
		{Name: "RUNBLOCK_PRELOAD", Kind: preload, Default: "auto",
			Doc:   "Modules imported once before the runs, such as numpy,matplotlib.pyplot: by the fork server (every run is a fork with them loaded), or by each pre-started sandbox without it. auto = numpy,matplotlib.pyplot in the fork server where the interpreter has both; off = none.",
			field: func(c *Config) any { return &c.Executor.Preload }},
		{Name: "RUNBLOCK_FORKSERVER", Kind: offSwitch, Default: "on",
			Doc:   "on = each run is a fork of a long-lived sandboxed fork server that has loaded the guard and RUNBLOCK_PRELOAD (the pool then holds pre-forked children); off = each run starts a sandbox from scratch. Where the fork server cannot start, runs fall back to that (`runblock doctor` says which).",
			field: func(c *Config) any { return &c.Executor.DisableForkServer }},
		{Name: "RUNBLOCK_CGROUP", Kind: text, DefaultDoc: "the service's own cgroup, if delegated",
			Doc:   "A cgroup v2 subtree delegated to runblock (below /sys/fs/cgroup, memory and pids enabled in its cgroup.subtree_control): each run gets its own cgroup there. Unset: the service's own cgroup if it is such a subtree, else the sandbox's init accounts each run's memory (`runblock doctor` says which).",
			field: func(c *Config) any { return &c.Executor.Cgroup }},
	}},
	{Title: "Sessions", About: "a thread's (or an API session's) cells share one live Python, like a notebook's", Part: Sandbox, Settings: []Setting{
		{Name: "RUNBLOCK_SESSIONS", Kind: offSwitch, Default: "on", UsedBy: sessionCommands,
			Doc:   "on = the messages of a thread (and the API's runs with the same session id) share variables, imports and files, run by one live process per session; off = every message runs alone.",
			field: func(c *Config) any { return &c.Sessions.Disabled }},
		{Name: "RUNBLOCK_SESSION_IDLE", Kind: duration, Default: formatting.SettingDuration(session.DefaultIdle), UsedBy: sessionCommands,
			Doc:   "A session's process ends after this long without a cell; the next cell rebuilds its state by replaying the earlier ones.",
			field: func(c *Config) any { return &c.Sessions.Idle }},
		{Name: "RUNBLOCK_SESSION_MAX", Kind: whole, Default: strconv.Itoa(session.DefaultMaxLive), Min: 1, Max: MaxSessions, UsedBy: sessionCommands,
			Doc:   "Live sessions per executor; past it the least recently used ends (its next cell replays).",
			field: func(c *Config) any { return &c.Sessions.MaxLive }},
		{Name: "RUNBLOCK_SESSION_MEMORY", Kind: memory, Default: formatSize(session.DefaultMemoryBytes), UsedBy: sessionCommands,
			Doc:   "The memory the live sessions hold together; past it the least recently used end (their next cell replays).",
			field: func(c *Config) any { return &c.Sessions.MemoryBytes }},
	}},
	{Title: "Scheduler", About: "sharing the executor", Part: Scheduler, Settings: []Setting{
		{Name: "RUNBLOCK_CONCURRENCY", Kind: whole, DefaultDoc: "number of CPUs", Min: 1, Max: MaxConcurrency,
			Doc:   "Runs at once (with remote executors: their total capacity, read from them).",
			field: func(c *Config) any { return &c.Scheduler.Concurrency }},
		{Name: "RUNBLOCK_QUEUE", Kind: whole, Default: strconv.Itoa(executor.DefaultQueueSize), Min: 1, Max: MaxQueue,
			Doc:   "Jobs that may wait; past it the reply says runblock is busy.",
			field: func(c *Config) any { return &c.Scheduler.QueueSize }},
		{Name: "RUNBLOCK_USER_RATE", Kind: rate, Default: formatRate(executor.DefaultUserRate), UsedBy: []string{"serve"},
			Doc:   "Per-user rate, a token bucket keyed by platform + user (an executor leaves per-user limits to its bots).",
			field: func(c *Config) any { return &c.Scheduler.UserRate }},
		{Name: "RUNBLOCK_USER_BURST", Kind: whole, Default: strconv.Itoa(executor.DefaultUserBurst), Min: 1, UsedBy: []string{"serve"},
			Doc:   "Runs a user may make in a burst before the rate applies.",
			field: func(c *Config) any { return &c.Scheduler.UserBurst }},
		{Name: "RUNBLOCK_USER_MAX_JOBS", Kind: whole, Default: strconv.Itoa(executor.DefaultMaxPerUser), Min: 1, UsedBy: []string{"serve"},
			Doc:   "Queued-or-running jobs per user.",
			field: func(c *Config) any { return &c.Scheduler.MaxPerUser }},
	}},
	{Title: "Slack", About: "see `runblock manifest slack`", Part: Chat, Settings: []Setting{
		{Name: "SLACK_BOT_TOKEN", Kind: slackToken("xoxb-", "a bot token", "xapp-", "an app-level token", "SLACK_APP_TOKEN"), Secret: true,
			Doc:   "Bot token (xoxb-...). Setting it turns the Slack adapter on.",
			field: func(c *Config) any { return &c.Slack.BotToken }},
		{Name: "SLACK_APP_TOKEN", Kind: slackToken("xapp-", "an app-level token", "xoxb-", "a bot token", "SLACK_BOT_TOKEN"), Secret: true,
			Doc:   "App-level token (xapp-..., scope connections:write) for Socket Mode.",
			field: func(c *Config) any { return &c.Slack.AppToken }},
		{Name: "SLACK_SIGNING_SECRET", Kind: secret, Secret: true,
			Doc:   "Signing secret for the Events API over HTTP instead of Socket Mode (needs RUNBLOCK_HTTP_ADDR).",
			field: func(c *Config) any { return &c.Slack.SigningSecret }},
		{Name: "SLACK_CLIENT_ID", Kind: text,
			Doc:   "The app's client id (Basic Information): with SLACK_CLIENT_SECRET and SLACK_SIGNING_SECRET, and no SLACK_BOT_TOKEN, runblock is a distributed app that workspaces add at /slack/install, answering each with its own token from RUNBLOCK_STORE.",
			field: func(c *Config) any { return &c.Slack.ClientID }},
		{Name: "SLACK_CLIENT_SECRET", Kind: secret, Secret: true,
			Doc:   "The app's client secret, for the OAuth install flow and token rotation.",
			field: func(c *Config) any { return &c.Slack.ClientSecret }},
		{Name: "SLACK_CHANNELS", Kind: list,
			Doc:   "Comma-separated channel ids where any Python block runs without a mention. When set it is also the allow-list: other channels get \"not in this channel\" (DMs always work).",
			field: func(c *Config) any { return &c.Slack.Channels }},
		{Name: "SLACK_RUN_REACTION", Kind: slackEmoji, Default: slack.DefaultRunReaction,
			Doc:   "Reaction that runs a message's code block (emoji name, colons optional).",
			field: func(c *Config) any { return &c.Slack.RunReaction }},
		{Name: "SLACK_EDIT_WINDOW", Kind: window, Default: formatting.SettingDuration(slack.DefaultEditWindow),
			Doc:   "How long after posting an edit re-runs the snippet and updates the reply; 0s = never.",
			field: func(c *Config) any { return &c.Slack.EditWindow }},
		{Name: "SLACK_API_URL", Kind: apiURL("https://slack-gov.com/api/ for GovSlack, or your proxy's URL"), DefaultDoc: "https://slack.com/api/",
			Doc:   "Web API base URL: GovSlack (https://slack-gov.com/api/) or an egress proxy.",
			field: func(c *Config) any { return &c.Slack.APIURL }},
		{Name: "SLACK_PUBLIC_URL", Kind: publicURL, UsedBy: []string{"serve"}, DefaultDoc: "none: served at the root of its host",
			Doc:   "A distributed app's public base URL, as given to `runblock manifest slack --url`, such as https://example.com/runblock behind a proxy that strips /runblock: the install flow's cookie and links follow its path.",
			field: func(c *Config) any { return &c.Slack.PublicURL }},
	}},
	{Title: "Store", About: "installations and settings per workspace", Part: Chat, Settings: []Setting{
		{Name: "RUNBLOCK_STORE", Kind: storeLocation, Secret: true, UsedBy: []string{"serve"},
			DefaultDoc: "none (one workspace, tokens from the environment); with SLACK_CLIENT_ID: `sqlite:runblock.db` in the working directory",
			Doc:        "Where runblock keeps installations, settings per workspace and guild, and the ids of events answered: sqlite:PATH (one process), or postgres://USER:PASSWORD@HOST/DB for replicas that share it.",
			field:      func(c *Config) any { return &c.Store }},
		{Name: "RUNBLOCK_STORE_KEY", Kind: storeKey, Secret: true, UsedBy: []string{"serve"},
			Doc:   "Key that encrypts the tokens in RUNBLOCK_STORE (AES-256-GCM): 32 bytes in hex or base64, such as the output of `openssl rand -hex 32`. Required to store tokens; keep it, the tokens open only with it.",
			field: func(c *Config) any { return &c.StoreKey }},
	}},
	{Title: "Discord", Part: Chat, Settings: []Setting{
		{Name: "DISCORD_BOT_TOKEN", Aliases: []string{"DISCORD_TOKEN"}, Kind: discordToken, Secret: true,
			Doc:   "Bot token from the developer portal. Setting it turns the Discord adapter on. DISCORD_TOKEN, discord.py's name for it, is read too.",
			field: func(c *Config) any { return &c.Discord.Token }},
		{Name: "DISCORD_CHANNELS", Kind: list,
			Doc:   "Comma-separated channel ids (threads included) where any Python block runs without the prefix. When set it is also the allow-list (DMs always work).",
			field: func(c *Config) any { return &c.Discord.Channels }},
		{Name: "DISCORD_PREFIX", Kind: text, Default: discord.DefaultPrefix,
			Doc:   "Message prefix that triggers a run.",
			field: func(c *Config) any { return &c.Discord.Prefix }},
		{Name: "DISCORD_GUILD_ID", Kind: snowflake,
			Doc:   "Register slash and context-menu commands in this server only (instant; global ones take up to an hour).",
			field: func(c *Config) any { return &c.Discord.GuildID }},
		{Name: "DISCORD_RUN_REACTION", Kind: text, Default: discord.DefaultRunReaction,
			Doc:   "Reaction that runs a message's code block.",
			field: func(c *Config) any { return &c.Discord.RunReaction }},
		{Name: "DISCORD_EDIT_WINDOW", Kind: window, Default: formatting.SettingDuration(discord.DefaultEditWindow),
			Doc:   "How long after posting an edit re-runs the snippet and edits the reply; 0s = never.",
			field: func(c *Config) any { return &c.Discord.EditWindow }},
		{Name: "DISCORD_SHARD_ID", Kind: shardID, Default: "0",
			Doc:   "This replica's shard, 0 to DISCORD_SHARD_COUNT-1 (Discord requires sharding from 2,500 servers); a StatefulSet pod name such as runblock-bot-2 is read as its ordinal. Direct messages go to shard 0.",
			field: func(c *Config) any { return &c.Discord.ShardID }},
		{Name: "DISCORD_SHARD_COUNT", Kind: whole, Default: "1", Min: 1, Max: maxShards,
			Doc:   "The number of shards: run one replica per shard, each with the same count.",
			field: func(c *Config) any { return &c.Discord.ShardCount }},
		{Name: "DISCORD_API_URL", Kind: apiURL("the base URL of your REST proxy, such as http://discord-proxy:8080/"), DefaultDoc: "https://discord.com/",
			Doc:   "REST base URL: a REST proxy that shares rate limits across shards.",
			field: func(c *Config) any { return &c.Discord.APIURL }},
	}},
	{Title: "HTTP", About: "/healthz, /readyz, /metrics (and /slack/ for the Events API)", Part: HTTP, Settings: []Setting{
		{Name: "RUNBLOCK_HTTP_ADDR", Kind: addr, DefaultDoc: "serve: none; executor: `127.0.0.1:8080`",
			Doc:   "Listen address such as :8080 (the executor's execute API needs RUNBLOCK_API_TOKEN off loopback).",
			field: func(c *Config) any { return &c.HTTPAddr }},
		{Name: "RUNBLOCK_DRAIN_TIMEOUT", Kind: duration, Default: formatting.SettingDuration(DefaultDrainTimeout), UsedBy: []string{"serve", "executor"},
			Doc:   "On SIGINT/SIGTERM, how long runs in flight may take to finish and be answered.",
			field: func(c *Config) any { return &c.DrainTimeout }},
	}},
	{Title: "Executors", About: "`runblock executor` and bots running on them", Part: Remote, Settings: []Setting{
		{Name: "RUNBLOCK_EXECUTOR_URL", Kind: urls, UsedBy: []string{"serve"}, DefaultDoc: "none: snippets run in the bot's own sandbox",
			Doc:   "Send runs to these `runblock executor` services: a comma list of base URLs, or one name that resolves to many addresses (a headless Kubernetes Service), re-resolved every 5 s; such as http://runblock-executor:8080.",
			field: func(c *Config) any { return &c.ExecutorURLs }},
		{Name: "RUNBLOCK_API_TOKEN", Kind: tokens, Secret: true,
			Doc:   "Bearer token(s) of the execute API, comma-separated, such as `openssl rand -hex 32`. executor: the tokens it accepts, each one client of its fair queue; required unless RUNBLOCK_HTTP_ADDR is loopback. serve: the first is sent to the executors.",
			field: func(c *Config) any { return &c.APITokens }},
		{Name: "RUNBLOCK_API_ORIGINS", Kind: origins, UsedBy: []string{"executor"}, DefaultDoc: "none: only the executor's own",
			Doc:   "Web origins whose pages may call the execute API and /mcp from a browser, comma-separated, such as https://notebook.example.com; a request with any other Origin header is refused (403), as is a body that is not JSON.",
			field: func(c *Config) any { return &c.APIOrigins }},
	}},
	{Title: "Logging", Settings: []Setting{
		{Name: "LOG_LEVEL", Kind: level, DefaultDoc: "`info`; `warn` for the console at a terminal",
			Doc:   "The least severe level logged.",
			field: func(c *Config) any { return &c.LogLevel }},
		{Name: "LOG_FORMAT", Kind: oneOf("text", "json"), Default: "text",
			Doc:   "Log line format; JSON carries durations as milliseconds under keys ending in _ms.",
			field: func(c *Config) any { return &c.LogFormat }},
	}},
	{Title: "Replies", Part: Chat, Settings: []Setting{
		{Name: "RUNBLOCK_REPLY_LINES", Kind: whole, Default: strconv.Itoa(formatting.DefaultMaxLines), Min: 1,
			Doc:   "Output lines shown inline; longer output is cut (and attached as a file on Slack and Discord).",
			field: func(c *Config) any { return &c.Render.MaxLines }},
		{Name: "RUNBLOCK_REPLY_CHARS", Kind: whole, Default: strconv.Itoa(formatting.DefaultMaxChars), Min: 1,
			Doc:   "Output characters shown inline; longer output is cut likewise.",
			field: func(c *Config) any { return &c.Render.MaxChars }},
	}},
}

// lookup returns the setting named name (or aliased so), if any.
func lookup(name string) (*Setting, bool) {
	for i := range Sections {
		for j := range Sections[i].Settings {
			s := &Sections[i].Settings[j]
			if s.Name == name {
				return s, true
			}
			for _, a := range s.Aliases {
				if a == name {
					return s, true
				}
			}
		}
	}
	return nil, false
}

// commandsOf names the commands that use the settings of sec, narrowed to
// s.UsedBy; nil means every command.
func commandsOf(sec *Section, s *Setting) []string {
	if sec.Part == 0 {
		return nil
	}
	if s.UsedBy != nil {
		return s.UsedBy
	}
	var names []string
	for _, c := range Commands {
		if c.Parts&sec.Part != 0 {
			names = append(names, c.Name)
		}
	}
	return names
}
