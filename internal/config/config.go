package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"reflect"
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
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/store"
)

// Config is every setting of runblock, parsed once at start-up from the
// environment (and .env) and passed down.
type Config struct {
	Executor  sandbox.Config
	Scheduler executor.Config
	Sessions  session.Config
	Slack     slack.Config
	Discord   discord.Config
	HTTPAddr  string // RUNBLOCK_HTTP_ADDR; "" = no HTTP server
	// Store is the location of the store (RUNBLOCK_STORE, checked by
	// store.ParseLocation); "" = none.
	Store string
	// StoreKey encrypts the store's tokens (RUNBLOCK_STORE_KEY, checked by
	// store.ParseKey); "" = none.
	StoreKey     string
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
	// APIOrigins are the web origins, besides its own, whose pages may
	// call the executor's API (RUNBLOCK_API_ORIGINS).
	APIOrigins []string
	// Warnings are unknown variables with a runblock prefix (likely typos).
	Warnings []string
	// Notes are remarks on settings that were read, for the log.
	Notes []string
	parts Part // the parts Parse read
}

// Env is a set of environment variables by name.
type Env map[string]string

// Error is a bad setting. Its message is one line naming the variable,
// the dotenv file it came from if it did, and the fix; it never holds the
// value of a secret.
type Error struct {
	Var     string
	Value   string // "" for secrets
	File    string // the dotenv file that set Var; "" for the environment
	Problem string
	Fix     string
}

func (e *Error) Error() string {
	s := e.Var
	if e.Value != "" {
		s += "=" + strconv.Quote(e.Value)
	}
	if e.File != "" {
		s += " (set in " + e.File + ")"
	}
	return s + ": " + e.Problem + "; " + e.Fix
}

// Dotenv is the variables LoadEnv took from a dotenv file (those the
// environment did not set), each with the file's path.
type Dotenv map[string]string

// Explain marks a bad setting whose value came from a dotenv file with
// the file, so that its reader knows where to fix it.
func (d Dotenv) Explain(err error) error {
	var e *Error
	if errors.As(err, &e) && d[e.Var] != "" {
		e.File = d[e.Var]
	}
	return err
}

// LoadEnv returns the process environment environ ("KEY=value" entries) over
// the variables of the dotenv file at path, and the variables taken from
// the file: a real environment variable wins over the file. A missing file
// is not an error. A malformed file (godotenv refuses it, or it reads a
// line such as "=oops" as a variable without a name) is reported by line
// number, never by its content, which may hold tokens.
func LoadEnv(environ []string, path string) (Env, Dotenv, error) {
	env, dotenv := Env{}, Dotenv{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	default:
		file, err := godotenv.UnmarshalBytes(b)
		if _, unnamed := file[""]; err != nil || unnamed {
			return nil, nil, fmt.Errorf("reading %s: %s; each line must be KEY=value (values are not shown: they may hold tokens)", path, dotenvProblem(b))
		}
		maps.Copy(env, file)
		for k := range file {
			dotenv[k] = path
		}
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
			delete(dotenv, k)
		}
	}
	return env, dotenv, nil
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

// Parse validates the parts of env that a command uses into a Config,
// reading each setting of Sections that belongs to them (and the logging
// settings, which every command reads). It stops at the first bad setting
// and returns a *Error.
func Parse(env Env, parts Part) (Config, error) {
	p := &parser{env: env}
	c := Config{parts: parts}
	for i := range Sections {
		if sec := &Sections[i]; reads(parts, sec) {
			for j := range sec.Settings {
				p.read(&sec.Settings[j], &c)
			}
		}
	}

	// What the table does not say: defaults that follow other settings,
	// and settings that must agree.
	concurrency := c.Scheduler.Concurrency
	if concurrency == 0 {
		concurrency = runtime.NumCPU()
		if parts&Scheduler != 0 {
			c.Scheduler.Concurrency = concurrency
		}
	}
	if parts&Sandbox != 0 {
		c.Executor.KeepBytes = sandbox.DefaultKeepBytes
		if _, ok := p.get("RUNBLOCK_POOL"); !ok {
			c.Executor.Pool = min(concurrency, MaxPool)
		}
	}
	if parts&Chat != 0 {
		p.shards(c.Discord)
		c.Slack.Render = c.Render
		c.Discord.Render = c.Render
	}
	if parts&(Chat|HTTP) == Chat|HTTP {
		p.slackMode(c.Slack, c.HTTPAddr)
	}
	if parts&Chat != 0 && c.Slack.ClientID != "" {
		if c.Store == "" {
			c.Store = DefaultDistributionStore
			p.notes = append(p.notes, "RUNBLOCK_STORE is unset: installations are kept in "+c.Store)
		}
		if c.StoreKey == "" {
			p.fail(nil, "RUNBLOCK_STORE_KEY", "", "is missing", "a distributed Slack app (SLACK_CLIENT_ID) stores each workspace's token, encrypted: "+store.KeyHelp)
		}
	}
	_, c.LogLevelSet = p.get("LOG_LEVEL")
	if p.err != nil {
		return Config{}, p.err
	}
	for k := range env {
		_, known := lookup(k)
		ours := strings.HasPrefix(k, "RUNBLOCK_") || strings.HasPrefix(k, "SLACK_") || strings.HasPrefix(k, "DISCORD_")
		if ours && !known {
			c.Warnings = append(c.Warnings, k)
		}
	}
	slices.Sort(c.Warnings)
	c.Notes = p.notes
	return c, nil
}

// reads reports whether a command reading parts reads the settings of sec.
func reads(parts Part, sec *Section) bool { return sec.Part == 0 || parts&sec.Part != 0 }

// shards checks that this replica's DISCORD_SHARD_ID is one of
// DISCORD_SHARD_COUNT; neither set means one shard.
func (p *parser) shards(d discord.Config) {
	_, idSet := p.get("DISCORD_SHARD_ID")
	count := strconv.Itoa(d.ShardCount)
	switch {
	case !idSet && d.ShardCount > 1:
		p.fail(nil, "DISCORD_SHARD_COUNT", count, "is set without DISCORD_SHARD_ID", "give each replica its shard id, 0 to "+strconv.Itoa(d.ShardCount-1)+" (a StatefulSet's pod name works)")
	case d.ShardID >= d.ShardCount:
		v, _ := p.get("DISCORD_SHARD_ID")
		p.fail(nil, "DISCORD_SHARD_ID", v, "must be less than DISCORD_SHARD_COUNT ("+count+")", "number the shards 0 to "+strconv.Itoa(d.ShardCount-1)+", and set DISCORD_SHARD_COUNT on every replica")
	}
}

// DefaultDistributionStore is the store of a distributed Slack app
// without RUNBLOCK_STORE: a SQLite file in the working directory (the
// image's is a volume).
const DefaultDistributionStore = "sqlite:runblock.db"

// slackMode checks that the Slack settings make a working connection.
func (p *parser) slackMode(s slack.Config, httpAddr string) {
	switch {
	case s.ClientID == "" && s.ClientSecret != "":
		p.fail(nil, "SLACK_CLIENT_ID", "", "is missing", "set it with SLACK_CLIENT_SECRET (Basic Information of your Slack app), or unset SLACK_CLIENT_SECRET")
	case s.ClientID != "" && (s.BotToken != "" || s.AppToken != ""):
		name := "SLACK_BOT_TOKEN"
		if s.BotToken == "" {
			name = "SLACK_APP_TOKEN"
		}
		p.fail(nil, name, "", "is set with SLACK_CLIENT_ID", "a distributed app answers each workspace with the token it was installed with, over the Events API: unset SLACK_BOT_TOKEN and SLACK_APP_TOKEN, or unset SLACK_CLIENT_ID for one workspace")
	case s.ClientID != "" && s.ClientSecret == "":
		p.fail(nil, "SLACK_CLIENT_SECRET", "", "is missing", "set it to the client secret from Basic Information of your Slack app")
	case s.ClientID != "" && s.SigningSecret == "":
		p.fail(nil, "SLACK_SIGNING_SECRET", "", "is missing", "a distributed app takes events over HTTP: set it to the signing secret from Basic Information of your Slack app")
	case s.ClientID != "" && httpAddr == "":
		p.fail(nil, "RUNBLOCK_HTTP_ADDR", "", "is missing", "a distributed app serves /slack/install, /slack/oauth_redirect and /slack/events: set an address such as :8080")
	case s.ClientID != "":
		// A complete distributed app: the checks below are for one
		// workspace's tokens.
	case s.BotToken == "" && (s.AppToken != "" || s.SigningSecret != ""):
		p.fail(nil, "SLACK_BOT_TOKEN", "", "is missing", "set it to the app's bot token (xoxb-...) or unset SLACK_APP_TOKEN and SLACK_SIGNING_SECRET")
	case s.BotToken != "" && s.AppToken == "" && s.SigningSecret == "":
		p.fail(nil, "SLACK_APP_TOKEN", "", "is missing", "set it (xapp-..., Socket Mode) or set SLACK_SIGNING_SECRET and RUNBLOCK_HTTP_ADDR for the Events API")
	case s.SigningSecret != "" && httpAddr == "":
		p.fail(nil, "RUNBLOCK_HTTP_ADDR", "", "is missing", "the Events API (SLACK_SIGNING_SECRET) needs an HTTP address such as :8080")
	}
}

// SlackEnabled reports whether the Slack adapter is configured: with one
// workspace's token, or as a distributed app.
func (c Config) SlackEnabled() bool { return c.Slack.BotToken != "" || c.Slack.ClientID != "" }

// DiscordEnabled reports whether the Discord adapter is configured.
func (c Config) DiscordEnabled() bool { return c.Discord.Token != "" }

// valueOf is the value of s in c.
func valueOf(c *Config, s *Setting) any { return reflect.ValueOf(s.field(c)).Elem().Interface() }

// Secrets returns the values of the secret settings in c, or the
// credentials in them, for redaction.
func (c Config) Secrets() []string {
	var out []string
	for i := range Sections {
		for j := range Sections[i].Settings {
			s := &Sections[i].Settings[j]
			if !s.Secret {
				continue
			}
			switch v := valueOf(&c, s).(type) {
			case string:
				switch {
				case v == "":
				case s.Kind.credentials != nil:
					out = append(out, s.Kind.credentials(v)...)
				default:
					out = append(out, v)
				}
			case []string:
				out = append(out, v...)
			}
		}
	}
	return out
}

// LogValue is the start-up summary of c: every setting the command read,
// keyed by its name in lower case without the RUNBLOCK_ prefix; a secret
// shows only whether it is set, or itself without its credentials.
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	for i := range Sections {
		sec := &Sections[i]
		if !reads(c.parts, sec) {
			continue
		}
		for j := range sec.Settings {
			s := &sec.Settings[j]
			v := valueOf(&c, s)
			switch {
			case s.Secret && s.Kind.credentials == nil:
				v = secretState(v)
			case s.Kind.show != nil:
				v = s.Kind.show(v)
			}
			attrs = append(attrs, slog.Any(strings.ToLower(strings.TrimPrefix(s.Name, "RUNBLOCK_")), v))
		}
	}
	return slog.GroupValue(attrs...)
}

// secretState says whether a secret (or how many of a list) is set.
func secretState(v any) string {
	n := 0
	switch v := v.(type) {
	case string:
		if v != "" {
			return "set"
		}
	case []string:
		n = len(v)
	}
	if n == 0 {
		return "unset"
	}
	return strconv.Itoa(n) + " set"
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

// binaryUnits are the units of ParseSize, largest first.
var binaryUnits = []struct {
	name  string
	bytes int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// formatSize writes n exactly in the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range binaryUnits {
		if n != 0 && n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// approxSize writes a number of bytes roughly, in the largest unit it fills.
func approxSize(n float64) string {
	for _, u := range binaryUnits {
		if n >= float64(u.bytes) {
			return fmt.Sprintf("about %.0f%s", n/float64(u.bytes), u.name)
		}
	}
	return fmt.Sprintf("%.0f bytes", n)
}

// MaxBareMiB bounds a bare number read as MiB (RUNBLOCK_MEMORY, exec's
// --memory): a limit of more than 64 GiB written without a unit is far
// more likely a count of bytes, as the execute API's memory field takes,
// than a size in MiB, so ParseSize refuses it rather than guess; a
// bare 300000000 would otherwise be about 286 TiB, no limit at all.
const MaxBareMiB = 64 << 10

// BareSizeError is a bare number that, counted in the unit a size takes,
// is over MaxBareMiB MiB.
type BareSizeError struct {
	Number float64 // as written
	Unit   int64   // the bytes a bare number counts
}

func (e *BareSizeError) Error() string {
	return fmt.Sprintf("a bare %g counts units of %s, over %dGiB; write a unit (%gB for bytes)", e.Number, formatSize(e.Unit), MaxBareMiB>>10, e.Number)
}

// ParseSize parses a size with an optional binary unit (K, KB, KiB, M, MB,
// MiB, G, GB, GiB; B for bytes); a bare number counts in units of unit,
// and is refused with a *BareSizeError when unit is larger than a byte
// and the size would be over MaxBareMiB MiB.
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
	n := f * float64(mult)
	switch {
	case suffix == "" && unit > 1 && n > float64(MaxBareMiB<<20):
		return 0, &BareSizeError{Number: f, Unit: unit}
	case math.Abs(n) >= math.MaxInt64:
		return 0, fmt.Errorf("%s is too large", s)
	}
	return int64(n), nil
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
