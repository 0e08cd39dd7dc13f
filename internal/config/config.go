package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/slack"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/formatting"
)

// Config is every setting of runblock, parsed once at start-up from the
// environment (and .env) and passed down.
type Config struct {
	Executor     sandbox.Config
	Scheduler    executor.Config
	Slack        slack.Config
	Discord      discord.Config
	HTTPAddr     string // RUNBLOCK_HTTP_ADDR; "" = no HTTP server
	LogLevel     slog.Level
	LogLevelSet  bool   // LOG_LEVEL was given (else the console may quieten the log)
	LogFormat    string // "text" or "json"
	Render       formatting.RenderOptions
	DrainTimeout time.Duration // RUNBLOCK_DRAIN_TIMEOUT
	// ExecutorURLs are the remote executors `runblock serve` sends runs to
	// (RUNBLOCK_EXECUTOR_URL); none: its own sandbox.
	ExecutorURLs []string
	// APITokens are the bearer tokens of the execute API (RUNBLOCK_API_TOKEN,
	// a comma list): `runblock executor` accepts each, `runblock serve`
	// sends the first to its remote executors.
	APITokens []string
	// Warnings are unknown variables with a runblock prefix (likely typos).
	Warnings []string
	// Notes are remarks on settings that were read, for the log.
	Notes []string
}

// Env is a set of environment variables by name.
type Env map[string]string

// Variables lists every setting runblock reads, in .env.example order.
var Variables = []string{
	"RUNBLOCK_PYTHON", "RUNBLOCK_TIMEOUT", "RUNBLOCK_MEMORY", "RUNBLOCK_MAX_OUTPUT_BYTES",
	"RUNBLOCK_MAX_CODE_BYTES", "RUNBLOCK_MAX_FILES", "RUNBLOCK_MAX_FILES_BYTES", "RUNBLOCK_ALLOW_UNISOLATED", "RUNBLOCK_POOL", "RUNBLOCK_PRELOAD", "RUNBLOCK_FORKSERVER", "RUNBLOCK_CGROUP",
	"RUNBLOCK_CONCURRENCY", "RUNBLOCK_QUEUE", "RUNBLOCK_USER_RATE", "RUNBLOCK_USER_BURST", "RUNBLOCK_USER_MAX_JOBS",
	"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_CHANNELS", "SLACK_RUN_REACTION", "SLACK_EDIT_WINDOW", "SLACK_API_URL",
	"DISCORD_BOT_TOKEN", "DISCORD_CHANNELS", "DISCORD_PREFIX", "DISCORD_GUILD_ID", "DISCORD_RUN_REACTION", "DISCORD_EDIT_WINDOW",
	"DISCORD_SHARD_ID", "DISCORD_SHARD_COUNT", "DISCORD_API_URL",
	"RUNBLOCK_HTTP_ADDR", "RUNBLOCK_DRAIN_TIMEOUT",
	"RUNBLOCK_EXECUTOR_URL", "RUNBLOCK_API_TOKEN",
	"LOG_LEVEL", "LOG_FORMAT",
	"RUNBLOCK_REPLY_LINES", "RUNBLOCK_REPLY_CHARS",
}

// aliases are other names read for a setting: RUNBLOCK_MEMORY_MB (the old
// name of RUNBLOCK_MEMORY) and DISCORD_TOKEN (discord.py's name).
var aliases = []string{"RUNBLOCK_MEMORY_MB", "DISCORD_TOKEN"}

// secretVariables hold credentials: their values are never printed.
var secretVariables = []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "DISCORD_BOT_TOKEN", "DISCORD_TOKEN", "RUNBLOCK_API_TOKEN"}

// Error is a bad setting. Its message is one line naming the variable
// and the fix; it never holds the value of a secret.
type Error struct {
	Var     string
	Value   string // "" for secrets
	Problem string
	Fix     string
}

func (e *Error) Error() string {
	s := e.Var
	if e.Value != "" {
		s += "=" + strconv.Quote(e.Value)
	}
	return s + ": " + e.Problem + "; " + e.Fix
}

// LoadEnv returns the process environment environ ("KEY=value" entries) over
// the variables of the dotenv file at path: a real environment variable wins
// over the file. A missing file is not an error. A malformed file is
// reported by line number, never by its content, which may hold tokens.
func LoadEnv(environ []string, path string) (Env, error) {
	env := Env{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	default:
		file, err := godotenv.UnmarshalBytes(b)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %s; each line must be KEY=value (values are not shown: they may hold tokens)", path, dotenvProblem(b))
		}
		maps.Copy(env, file)
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

// dotenvLine is a line godotenv reads as a setting: KEY=value, KEY: value,
// or either after "export".
var dotenvLine = regexp.MustCompile(`^\s*(export\s+)?[A-Za-z_][A-Za-z0-9_.]*\s*[=:]`)

// dotenvProblem locates what godotenv refused in a dotenv file without
// quoting it: the first line that is no setting, or an unclosed quote.
func dotenvProblem(b []byte) string {
	var quote byte
	opened := 0
	for i, line := range strings.Split(string(b), "\n") {
		if quote != 0 {
			if strings.IndexByte(line, quote) >= 0 {
				quote = 0
			}
			continue
		}
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		key := dotenvLine.FindString(line)
		if key == "" {
			return fmt.Sprintf("line %d is not a setting", i+1)
		}
		v := strings.TrimSpace(line[len(key):])
		if v != "" && (v[0] == '"' || v[0] == '\'') && strings.IndexByte(v[1:], v[0]) < 0 {
			quote, opened = v[0], i+1
		}
	}
	if quote != 0 {
		return fmt.Sprintf("the quote opened on line %d is never closed", opened)
	}
	return "it does not parse"
}

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
)

// Parse validates the parts of env that a command uses into a Config. It
// stops at the first bad setting and returns a *Error.
func Parse(env Env, parts Part) (Config, error) {
	p := &parser{env: env}
	var c Config

	concurrency := runtime.NumCPU()
	if parts&Scheduler != 0 {
		concurrency = p.intIn("RUNBLOCK_CONCURRENCY", concurrency, 1, MaxConcurrency, "a number of parallel runs such as 2")
		c.Scheduler = executor.Config{
			Concurrency: concurrency,
			QueueSize:   p.intIn("RUNBLOCK_QUEUE", executor.DefaultQueueSize, 1, MaxQueue, "the number of jobs that may wait, such as 100"),
			UserRate:    p.rate("RUNBLOCK_USER_RATE", executor.DefaultUserRate),
			UserBurst:   p.int("RUNBLOCK_USER_BURST", executor.DefaultUserBurst, 1, "the number of runs a user may make at once before the rate applies, such as 5"),
			MaxPerUser:  p.int("RUNBLOCK_USER_MAX_JOBS", executor.DefaultMaxPerUser, 1, "the number of queued-or-running jobs per user, such as 1"),
		}
	}
	if parts&Sandbox != 0 {
		c.Executor = sandbox.Config{
			Python:            p.python("RUNBLOCK_PYTHON"),
			Timeout:           p.duration("RUNBLOCK_TIMEOUT", sandbox.DefaultTimeout, true),
			MemoryBytes:       p.memory(),
			MaxOutputBytes:    p.size("RUNBLOCK_MAX_OUTPUT_BYTES", sandbox.DefaultMaxOutputBytes),
			KeepBytes:         sandbox.DefaultKeepBytes,
			MaxCodeBytes:      p.size("RUNBLOCK_MAX_CODE_BYTES", sandbox.DefaultMaxCodeBytes),
			MaxFiles:          p.intIn("RUNBLOCK_MAX_FILES", sandbox.DefaultMaxFiles, 0, MaxFiles, "a number of files, such as 10, or 0 to return none"),
			MaxFilesBytes:     p.size("RUNBLOCK_MAX_FILES_BYTES", sandbox.DefaultMaxFilesBytes),
			AllowUnisolated:   p.bool("RUNBLOCK_ALLOW_UNISOLATED", false),
			Cgroup:            p.str("RUNBLOCK_CGROUP", ""),
			Preload:           p.modules("RUNBLOCK_PRELOAD"),
			DisableForkServer: !p.bool("RUNBLOCK_FORKSERVER", true),
		}
		if c.Executor.MaxFiles == 0 {
			c.Executor.MaxFiles = -1 // the executor's "none"
		}
		c.Executor.Pool = p.intIn("RUNBLOCK_POOL", min(concurrency, MaxPool), 0, MaxPool, "a number of pre-started sandboxes, 0 to turn the pool off")
	}
	if parts&Chat != 0 {
		c.Slack = slack.Config{
			BotToken:      p.token("SLACK_BOT_TOKEN", "xoxb-", "a bot token", "xapp-", "an app-level token", "SLACK_APP_TOKEN"),
			AppToken:      p.token("SLACK_APP_TOKEN", "xapp-", "an app-level token", "xoxb-", "a bot token", "SLACK_BOT_TOKEN"),
			SigningSecret: p.secret("SLACK_SIGNING_SECRET"),
			Channels:      p.list("SLACK_CHANNELS"),
			RunReaction:   strings.Trim(p.str("SLACK_RUN_REACTION", slack.DefaultRunReaction), ":"),
			EditWindow:    p.duration("SLACK_EDIT_WINDOW", slack.DefaultEditWindow, false),
			APIURL:        p.apiURL("SLACK_API_URL", "https://slack-gov.com/api/ for GovSlack, or your proxy's URL"),
		}
		c.Discord = discord.Config{
			Token:       p.discordToken(),
			Channels:    p.list("DISCORD_CHANNELS"),
			Prefix:      p.str("DISCORD_PREFIX", discord.DefaultPrefix),
			GuildID:     p.snowflake("DISCORD_GUILD_ID"),
			RunReaction: p.str("DISCORD_RUN_REACTION", discord.DefaultRunReaction),
			EditWindow:  p.duration("DISCORD_EDIT_WINDOW", discord.DefaultEditWindow, false),
			APIURL:      p.apiURL("DISCORD_API_URL", "the base URL of your REST proxy, such as http://discord-proxy:8080/"),
		}
		c.Discord.ShardID, c.Discord.ShardCount = p.shards("DISCORD_SHARD_ID", "DISCORD_SHARD_COUNT")
		c.Render = formatting.RenderOptions{
			MaxLines: p.int("RUNBLOCK_REPLY_LINES", formatting.DefaultMaxLines, 1, "a number of output lines shown inline, such as 15"),
			MaxChars: p.int("RUNBLOCK_REPLY_CHARS", formatting.DefaultMaxChars, 1, "a number of output characters shown inline, such as 1500"),
		}
		c.Slack.Render = c.Render
		c.Discord.Render = c.Render
	}
	if parts&HTTP != 0 {
		c.HTTPAddr = p.addr("RUNBLOCK_HTTP_ADDR")
		c.DrainTimeout = p.duration("RUNBLOCK_DRAIN_TIMEOUT", DefaultDrainTimeout, true)
	}
	if parts&Remote != 0 {
		c.ExecutorURLs = p.urls("RUNBLOCK_EXECUTOR_URL")
		c.APITokens = p.tokens("RUNBLOCK_API_TOKEN")
	}
	c.LogLevel = p.level("LOG_LEVEL")
	_, c.LogLevelSet = p.get("LOG_LEVEL")
	c.LogFormat = p.oneOf("LOG_FORMAT", "text", "text", "json")

	if parts&(Chat|HTTP) == Chat|HTTP {
		p.slackMode(c.Slack, c.HTTPAddr)
	}
	if p.err != nil {
		return Config{}, p.err
	}
	for k := range env {
		known := slices.Contains(Variables, k) || slices.Contains(aliases, k)
		ours := strings.HasPrefix(k, "RUNBLOCK_") || strings.HasPrefix(k, "SLACK_") || strings.HasPrefix(k, "DISCORD_")
		if ours && !known {
			c.Warnings = append(c.Warnings, k)
		}
	}
	slices.Sort(c.Warnings)
	c.Notes = p.notes
	return c, nil
}

// SlackEnabled reports whether the Slack adapter is configured.
func (c Config) SlackEnabled() bool { return c.Slack.BotToken != "" }

// DiscordEnabled reports whether the Discord adapter is configured.
func (c Config) DiscordEnabled() bool { return c.Discord.Token != "" }

// Secrets returns the credentials in c, for redaction.
func (c Config) Secrets() []string {
	var s []string
	for _, v := range append([]string{c.Slack.BotToken, c.Slack.AppToken, c.Slack.SigningSecret, c.Discord.Token}, c.APITokens...) {
		if v != "" {
			s = append(s, v)
		}
	}
	return s
}

// LogValue is the start-up summary of c, without credentials.
func (c Config) LogValue() slog.Value {
	set := func(s string) string {
		if s == "" {
			return "unset"
		}
		return "set"
	}
	return slog.GroupValue(
		slog.String("python", c.Executor.Python),
		slog.Duration("timeout", c.Executor.Timeout),
		slog.Int64("memory_mb", c.Executor.MemoryBytes>>20),
		slog.Int64("max_output_bytes", c.Executor.MaxOutputBytes),
		slog.Int64("max_code_bytes", c.Executor.MaxCodeBytes),
		slog.Bool("allow_unisolated", c.Executor.AllowUnisolated),
		slog.Int("pool", c.Executor.Pool),
		slog.String("cgroup", c.Executor.Cgroup),
		slog.Int("max_files", max(c.Executor.MaxFiles, 0)),
		slog.Int64("max_files_bytes", c.Executor.MaxFilesBytes),
		slog.Any("preload", c.Executor.Preload),
		slog.Bool("fork_server", !c.Executor.DisableForkServer),
		slog.Int("concurrency", c.Scheduler.Concurrency),
		slog.Int("queue", c.Scheduler.QueueSize),
		slog.String("user_rate", formatRate(c.Scheduler.UserRate)),
		slog.Int("user_burst", c.Scheduler.UserBurst),
		slog.Int("user_max_jobs", c.Scheduler.MaxPerUser),
		slog.String("slack_bot_token", set(c.Slack.BotToken)),
		slog.String("slack_app_token", set(c.Slack.AppToken)),
		slog.String("slack_signing_secret", set(c.Slack.SigningSecret)),
		slog.Any("slack_channels", c.Slack.Channels),
		slog.String("discord_bot_token", set(c.Discord.Token)),
		slog.Any("discord_channels", c.Discord.Channels),
		slog.String("discord_prefix", c.Discord.Prefix),
		slog.String("slack_api_url", c.Slack.APIURL),
		slog.String("discord_api_url", c.Discord.APIURL),
		slog.Int("discord_shard_id", c.Discord.ShardID),
		slog.Int("discord_shard_count", c.Discord.ShardCount),
		slog.String("http_addr", c.HTTPAddr),
		slog.Duration("drain_timeout", c.DrainTimeout),
		slog.Any("executor_urls", c.ExecutorURLs),
		slog.Int("api_tokens", len(c.APITokens)),
	)
}

func formatRate(perSecond float64) string {
	switch {
	case perSecond <= 0:
		return "off"
	case perSecond >= 1:
		return strconv.FormatFloat(perSecond, 'g', 4, 64) + "/s"
	case perSecond*60 >= 1:
		return strconv.FormatFloat(perSecond*60, 'g', 4, 64) + "/min"
	default:
		return strconv.FormatFloat(perSecond*3600, 'g', 4, 64) + "/h"
	}
}

// parser reads typed values from an Env, keeping the first error.
type parser struct {
	env   Env
	err   error
	notes []string
}

func (p *parser) get(name string) (string, bool) {
	v := strings.TrimSpace(p.env[name])
	return v, v != "" && p.err == nil
}

func (p *parser) fail(name, value, problem, fix string) {
	if p.err != nil {
		return
	}
	if slices.Contains(secretVariables, name) {
		value = ""
	}
	p.err = &Error{Var: name, Value: value, Problem: problem, Fix: fix}
}

func (p *parser) str(name, def string) string {
	if v, ok := p.get(name); ok {
		return v
	}
	return def
}

func (p *parser) duration(name string, def time.Duration, positive bool) time.Duration {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		if _, numErr := strconv.ParseFloat(v, 64); numErr == nil {
			p.fail(name, v, "a duration needs a unit", "write e.g. "+v+"s")
		} else {
			p.fail(name, v, "not a duration", "use e.g. 5s, 1500ms or 10m")
		}
	case d < 0 || (positive && d == 0):
		p.fail(name, v, "must be positive", "use e.g. "+def.String())
	}
	return d
}

func (p *parser) int(name string, def, min int, fix string) int {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		p.fail(name, v, "not a whole number", "use "+fix)
	case n < min && n < 0:
		p.fail(name, v, "must not be negative", "use "+fix)
	case n < min:
		p.fail(name, v, fmt.Sprintf("must be at least %d", min), "use "+fix)
	}
	return n
}

// intIn is int with an upper bound as well.
func (p *parser) intIn(name string, def, min, max int, fix string) int {
	n := p.int(name, def, min, fix)
	if n > max {
		v, _ := p.get(name)
		p.fail(name, v, fmt.Sprintf("must be at most %d", max), "use "+fix)
	}
	return n
}

// either returns name, or alias when only alias is set: which variable a
// setting with two names is read from.
func (p *parser) either(name, alias string) string {
	if _, ok := p.get(name); !ok {
		if _, ok := p.get(alias); ok {
			return alias
		}
	}
	return name
}

// memory reads RUNBLOCK_MEMORY, or its old name RUNBLOCK_MEMORY_MB: a size
// such as 256MiB, a bare number counting MiB.
func (p *parser) memory() int64 {
	name := p.either("RUNBLOCK_MEMORY", "RUNBLOCK_MEMORY_MB")
	v, ok := p.get(name)
	if !ok {
		return sandbox.DefaultMemoryBytes
	}
	const fix = "use a size such as 256MiB or 1GiB (a bare number counts MiB)"
	n, err := ParseSize(v, 1<<20)
	switch {
	case err != nil:
		p.fail(name, v, "not a size", fix)
	case n < MinMemoryBytes:
		p.fail(name, v, fmt.Sprintf("below the %d MiB a Python interpreter needs to start", MinMemoryBytes>>20), fix)
	}
	return n
}

// python checks RUNBLOCK_PYTHON names an interpreter that exists; "" lets
// the sandbox look for python3.
func (p *parser) python(name string) string {
	v, ok := p.get(name)
	if !ok {
		return ""
	}
	const fix = "set it to a Python 3 interpreter such as /usr/bin/python3, or unset it to use python3 from PATH"
	if !strings.ContainsRune(v, '/') {
		if _, err := exec.LookPath(v); err != nil {
			p.fail(name, v, "not found on PATH", fix)
		}
		return v
	}
	st, err := os.Stat(v)
	switch {
	case err != nil:
		p.fail(name, v, "no such file", fix)
	case st.IsDir() || st.Mode()&0o111 == 0:
		p.fail(name, v, "not an executable file", fix)
	}
	return v
}

// size parses a byte count: 1048576, 64KiB, 1MiB, 1M (binary units).
func (p *parser) size(name string, def int64) int64 {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	n, err := ParseSize(v, 1)
	switch {
	case err != nil:
		p.fail(name, v, "not a byte size", "use a number of bytes such as 1048576 or 1MiB")
	case n <= 0:
		p.fail(name, v, "must be positive", "use a number of bytes such as 1048576 or 1MiB")
	}
	return n
}

// ParseSize parses a size with an optional binary unit (K, KB, KiB, M, MB,
// MiB, G, GB, GiB; B for bytes); a bare number counts in units of unit.
func ParseSize(s string, unit int64) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '-' && r != '.' })
	num, suffix := s, ""
	if i >= 0 {
		num, suffix = s[:i], strings.TrimSpace(s[i:])
	}
	mult := unit
	switch strings.ToLower(suffix) {
	case "":
	case "b":
		mult = 1
	case "k", "kb", "kib":
		mult = 1 << 10
	case "m", "mb", "mib":
		mult = 1 << 20
	case "g", "gb", "gib":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("unknown unit %q", suffix)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	return int64(f * float64(mult)), nil
}

func (p *parser) bool(name string, def bool) bool {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	p.fail(name, v, "not a boolean", "use 1 or 0")
	return def
}

// rate parses "5/min", "1/s", "30/h" into runs per second; "off" is 0,
// which the scheduler takes as unlimited.
func (p *parser) rate(name string, def float64) float64 {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	if strings.EqualFold(v, "off") {
		return 0
	}
	const fix = "use runs per time unit such as 5/min, 1/s or 30/h, or off"
	num, unit, found := strings.Cut(v, "/")
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !found || err != nil {
		p.fail(name, v, "not a rate", fix)
		return def
	}
	if n <= 0 {
		p.fail(name, v, "must be positive", fix)
		return def
	}
	var per time.Duration
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		p.fail(name, v, "unknown time unit", fix)
		return def
	}
	return n / per.Seconds()
}

func (p *parser) list(name string) []string {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// modules reads a comma-separated list of Python module names.
func (p *parser) modules(name string) []string {
	mods := p.list(name)
	for _, m := range mods {
		if !moduleName.MatchString(m) {
			p.fail(name, m, "is not a Python module name", "name modules such as numpy,matplotlib.pyplot")
			return nil
		}
	}
	return mods
}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// urls reads a comma list of http(s) base URLs.
func (p *parser) urls(name string) []string {
	list := p.list(name)
	for _, v := range list {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			p.fail(name, v, "not a base URL", "use http://host:port, such as http://runblock-executor:8080, or a comma list of them")
			return nil
		}
	}
	return list
}

// tokens reads a comma list of secrets.
func (p *parser) tokens(name string) []string {
	list := p.list(name)
	for _, v := range list {
		if strings.ContainsAny(v, " \t\r\n") || len(v) < 16 {
			p.fail(name, "", "holds a token that is too short or contains whitespace", "use random tokens of at least 16 characters, such as the output of `openssl rand -hex 32`, comma-separated")
			return nil
		}
	}
	return list
}

func (p *parser) secret(name string) string {
	v, ok := p.get(name)
	if !ok {
		return ""
	}
	if strings.HasPrefix(name, "DISCORD_") {
		v = strings.TrimPrefix(v, "Bot ")
	}
	if strings.ContainsAny(v, " \t\r\n") {
		p.fail(name, "", "contains whitespace", "paste the value alone, without spaces or quotes")
	}
	return v
}

// token checks a Slack token's prefix, pointing at the right variable when a
// token of the other kind was pasted.
func (p *parser) token(name, prefix, kind, otherPrefix, otherKind, otherVar string) string {
	v := p.secret(name)
	switch {
	case v == "" || strings.HasPrefix(v, prefix):
	case strings.HasPrefix(v, otherPrefix):
		p.fail(name, "", "holds "+otherKind+" ("+otherPrefix+"...)", "that one belongs in "+otherVar+"; put "+kind+" ("+prefix+"...) here")
	default:
		p.fail(name, "", "is not "+kind, "copy "+kind+" starting with "+prefix+" from your Slack app's settings")
	}
	return v
}

func (p *parser) discordToken() string {
	name := p.either("DISCORD_BOT_TOKEN", "DISCORD_TOKEN")
	if name == "DISCORD_TOKEN" {
		p.notes = append(p.notes, "DISCORD_TOKEN read as DISCORD_BOT_TOKEN, runblock's name for the Discord bot token")
	}
	v := p.secret(name)
	switch {
	case strings.HasPrefix(v, "xoxb-") || strings.HasPrefix(v, "xapp-"):
		p.fail(name, "", "holds a Slack token", "put the Slack token in SLACK_BOT_TOKEN or SLACK_APP_TOKEN and the bot token from the Discord developer portal here")
	case v != "" && strings.Count(v, ".") != 2:
		p.fail(name, "", "is not a Discord bot token", "copy the token from the Bot page of your application in the Discord developer portal")
	}
	return v
}

func (p *parser) snowflake(name string) string {
	v, ok := p.get(name)
	if !ok {
		return ""
	}
	if _, err := strconv.ParseUint(v, 10, 64); err != nil {
		p.fail(name, v, "not a Discord id", "use the numeric server id (Developer Mode, right-click the server, Copy Server ID)")
	}
	return v
}

// apiURL reads the base URL of a chat platform's API (a proxy, or another
// deployment of it), normalized to end in "/".
func (p *parser) apiURL(name, example string) string {
	v, ok := p.get(name)
	if !ok {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		p.fail(name, v, "not an http(s) base URL", "use "+example)
		return ""
	}
	if !strings.HasSuffix(v, "/") {
		v += "/"
	}
	return v
}

// shards reads the shard of this process out of count: the id is a number
// or a StatefulSet pod name ("runblock-bot-2", its ordinal last), so the
// pod's name can be passed as it is. Neither set means one shard.
func (p *parser) shards(idName, countName string) (id, count int) {
	count = p.intIn(countName, 1, 1, maxShards, "the number of shards (bot replicas), such as 2")
	v, ok := p.get(idName)
	if !ok {
		if count > 1 {
			p.fail(countName, strconv.Itoa(count), "is set without "+idName, "give each replica its shard id, 0 to "+strconv.Itoa(count-1)+" (a StatefulSet's pod name works)")
		}
		return 0, count
	}
	ordinal := v
	if _, err := strconv.Atoi(v); err != nil {
		if i := strings.LastIndexByte(v, '-'); i > 0 {
			ordinal = v[i+1:]
		}
	}
	id, err := strconv.Atoi(ordinal)
	switch {
	case err != nil || id < 0:
		p.fail(idName, v, "not a shard id", "use a number from 0, or a StatefulSet pod name ending in its ordinal")
	case id >= count:
		p.fail(idName, v, fmt.Sprintf("must be less than %s (%d)", countName, count), "number the shards 0 to "+strconv.Itoa(count-1)+", and set "+countName+" on every replica")
	case ordinal != v:
		p.notes = append(p.notes, fmt.Sprintf("%s=%s read as shard %d (the ordinal at the end of the name)", idName, v, id))
	}
	return id, count
}

// maxShards bounds DISCORD_SHARD_COUNT: Discord wants a shard per 2,500
// guilds at most, so this is room for millions.
const maxShards = 4096

func (p *parser) addr(name string) string {
	v, ok := p.get(name)
	if !ok {
		return ""
	}
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		p.fail(name, v, "not a listen address", "use host:port such as :8080 or 127.0.0.1:8080")
	}
	return v
}

func (p *parser) level(name string) slog.Level {
	v, ok := p.get(name)
	if !ok {
		return slog.LevelInfo
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		p.fail(name, v, "not a log level", "use debug, info, warn or error")
	}
	return l
}

func (p *parser) oneOf(name, def string, allowed ...string) string {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	v = strings.ToLower(v)
	if !slices.Contains(allowed, v) {
		p.fail(name, v, "unknown value", "use "+strings.Join(allowed, " or "))
	}
	return v
}

// slackMode checks that the Slack settings make a working connection.
func (p *parser) slackMode(s slack.Config, httpAddr string) {
	switch {
	case s.BotToken == "" && (s.AppToken != "" || s.SigningSecret != ""):
		p.fail("SLACK_BOT_TOKEN", "", "is missing", "set it to the app's bot token (xoxb-...) or unset SLACK_APP_TOKEN and SLACK_SIGNING_SECRET")
	case s.BotToken != "" && s.AppToken == "" && s.SigningSecret == "":
		p.fail("SLACK_APP_TOKEN", "", "is missing", "set it (xapp-..., Socket Mode) or set SLACK_SIGNING_SECRET and RUNBLOCK_HTTP_ADDR for the Events API")
	case s.SigningSecret != "" && httpAddr == "":
		p.fail("RUNBLOCK_HTTP_ADDR", "", "is missing", "the Events API (SLACK_SIGNING_SECRET) needs an HTTP address such as :8080")
	}
}

// NewLogger returns the service's logger, writing text or JSON to w and
// redacting every credential of cfg from every message and attribute. In
// JSON a duration is a number of milliseconds under a key ending in "_ms",
// so that log tools need not know Go's nanoseconds.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	secrets := cfg.Secrets()
	jsonOut := cfg.LogFormat == "json"
	opts := &slog.HandlerOptions{
		Level: cfg.LogLevel,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			var s string
			switch a.Value.Kind() {
			case slog.KindDuration:
				if jsonOut {
					return slog.Float64(a.Key+"_ms", float64(a.Value.Duration().Microseconds())/1000)
				}
				return a
			case slog.KindString:
				s = a.Value.String()
			case slog.KindAny:
				s = fmt.Sprint(a.Value.Any())
			default:
				return a
			}
			redacted := s
			for _, secret := range secrets {
				redacted = strings.ReplaceAll(redacted, secret, "[redacted]")
			}
			if redacted == s {
				return a
			}
			return slog.String(a.Key, redacted)
		},
	}
	if jsonOut {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
