package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/store"
)

// Kind is how a setting's value is read: parse turns the text into the
// type of the setting's field (reporting a bad value through the parser),
// values says what it takes, for .env.example and the README, and show, if
// set, is its form in the log. credentials, if set, are the parts of a
// secret value that are secret (else all of it is): the log redacts those
// and shows the rest.
type Kind struct {
	parse       func(p *parser, s *Setting, name, v string) any
	values      func(s *Setting) string
	show        func(v any) any
	credentials func(v string) []string
}

// parser reads settings from an Env, keeping the first error.
type parser struct {
	env   Env
	err   error
	notes []string
}

// get returns the trimmed value of name; unset and empty are the same.
func (p *parser) get(name string) (string, bool) {
	v := strings.TrimSpace(p.env[name])
	return v, v != "" && p.err == nil
}

// read parses s from its variable, or an alias when only that is set, or
// its default, into its field of c.
func (p *parser) read(s *Setting, c *Config) {
	name := s.Name
	v, ok := p.get(name)
	for _, alias := range s.Aliases {
		if ok {
			break
		}
		if v, ok = p.get(alias); ok {
			name = alias
			p.notes = append(p.notes, alias+" read as "+s.Name+", runblock's name for it")
		}
	}
	if !ok {
		if s.Default == "" {
			return
		}
		v = s.Default
	}
	val := s.Kind.parse(p, s, name, v)
	if p.err != nil {
		return
	}
	reflectSet(s.field(c), val)
}

func (p *parser) fail(s *Setting, name, value, problem, fix string) {
	if p.err != nil {
		return
	}
	if s != nil && s.Secret {
		value = ""
	}
	p.err = &Error{Var: name, Value: value, Problem: problem, Fix: fix}
}

// reflectSet stores val at ptr, a pointer to a value of val's type.
func reflectSet(ptr, val any) {
	reflect.ValueOf(ptr).Elem().Set(reflect.ValueOf(val))
}

func fixed(values string) func(*Setting) string { return func(*Setting) string { return values } }

var text = Kind{
	parse:  func(_ *parser, _ *Setting, _, v string) any { return v },
	values: fixed(""),
}

// slackEmoji is an emoji name, with or without its colons.
var slackEmoji = Kind{
	parse:  func(_ *parser, _ *Setting, _, v string) any { return strings.Trim(v, ":") },
	values: fixed("an emoji name"),
}

func parseBool(p *parser, s *Setting, name, v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	p.fail(s, name, v, "not a boolean", "use 1 or 0")
	return false
}

var boolean = Kind{
	parse:  func(p *parser, s *Setting, name, v string) any { return parseBool(p, s, name, v) },
	values: fixed("1 or 0 (also on/off, true/false, yes/no)"),
}

// offSwitch reads on or off into a field that says "disabled".
var offSwitch = Kind{
	parse:  func(p *parser, s *Setting, name, v string) any { return !parseBool(p, s, name, v) },
	values: fixed("on or off"),
	show:   func(v any) any { return !v.(bool) },
}

func parseWhole(p *parser, s *Setting, name, v string) int {
	n, err := strconv.Atoi(v)
	fix := "use " + wholeValues(s)
	if s.Default != "" {
		fix += ", such as " + s.Default
	}
	switch {
	case err != nil:
		p.fail(s, name, v, "not a whole number", fix)
	case n < s.Min && n < 0:
		p.fail(s, name, v, "must not be negative", fix)
	case n < s.Min:
		p.fail(s, name, v, fmt.Sprintf("must be at least %d", s.Min), fix)
	case s.Max > 0 && n > s.Max:
		p.fail(s, name, v, fmt.Sprintf("must be at most %d", s.Max), fix)
	}
	return n
}

func wholeValues(s *Setting) string {
	if s.Max > 0 {
		return fmt.Sprintf("a whole number from %d to %d", s.Min, s.Max)
	}
	return fmt.Sprintf("a whole number of at least %d", s.Min)
}

var whole = Kind{
	parse:  func(p *parser, s *Setting, name, v string) any { return parseWhole(p, s, name, v) },
	values: wholeValues,
}

// fileCount is a whole number whose 0 is the executor's "none", -1.
var fileCount = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		if n := parseWhole(p, s, name, v); n != 0 {
			return n
		}
		return -1
	},
	values: wholeValues,
	show:   func(v any) any { return max(v.(int), 0) },
}

// size is a byte count; a bare number counts bytes.
var size = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		const fix = "use a number of bytes such as 1048576 or 1MiB"
		n, err := ParseSize(v, 1)
		switch {
		case err != nil:
			p.fail(s, name, v, "not a byte size", fix)
		case n <= 0:
			p.fail(s, name, v, "must be positive", fix)
		}
		return n
	},
	values: fixed("a size such as 1MiB, 64KiB or 1048576 (a bare number counts bytes)"),
}

// memory is a memory limit; a bare number counts MiB, up to MaxBareMiB.
var memory = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		const fix = "use a size such as 256MiB or 1GiB (a bare number counts MiB)"
		n, err := ParseSize(v, 1<<20)
		var bare *BareSizeError
		switch {
		case errors.As(err, &bare):
			p.fail(s, name, v, fmt.Sprintf("a bare number counts MiB, and %s MiB is more than %d GiB", v, MaxBareMiB>>10),
				fmt.Sprintf("write %sB if it is bytes (%s), or a size such as 256MiB", v, approxSize(bare.Number)))
		case err != nil:
			p.fail(s, name, v, "not a size", fix)
		case n < MinMemoryBytes:
			p.fail(s, name, v, fmt.Sprintf("below the %d MiB a Python interpreter needs to start", MinMemoryBytes>>20), fix)
		}
		return n
	},
	values: fixed(fmt.Sprintf("a size such as 256MiB or 1GiB, at least %dMiB; a bare number counts MiB, and one over %d (%dGiB) is refused: write bytes with a B, such as 268435456B", MinMemoryBytes>>20, MaxBareMiB, MaxBareMiB>>10)),
}

func parseDuration(p *parser, s *Setting, name, v string, positive bool) time.Duration {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		if _, numErr := strconv.ParseFloat(v, 64); numErr == nil {
			p.fail(s, name, v, "a duration needs a unit", "write e.g. "+v+"s")
		} else {
			p.fail(s, name, v, "not a duration", "use e.g. 5s, 1500ms or 10m")
		}
	case d < 0 || (positive && d == 0):
		p.fail(s, name, v, "must be positive", "use e.g. "+s.Default)
	}
	return d
}

// duration is a positive Go duration.
var duration = Kind{
	parse:  func(p *parser, s *Setting, name, v string) any { return parseDuration(p, s, name, v, true) },
	values: fixed("a duration such as 5s, 1500ms or 10m"),
}

// window is a duration in which 0 turns a feature off.
var window = Kind{
	parse:  func(p *parser, s *Setting, name, v string) any { return parseDuration(p, s, name, v, false) },
	values: fixed("a duration such as 10m, or 0s"),
}

// rate reads "5/min", "1/s", "30/h" into runs per second; "off" is 0,
// which the scheduler takes as unlimited.
var rate = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		if strings.EqualFold(v, "off") {
			return 0.0
		}
		const fix = "use runs per time unit such as 5/min, 1/s or 30/h, or off"
		num, unit, found := strings.Cut(v, "/")
		n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if !found || err != nil {
			p.fail(s, name, v, "not a rate", fix)
			return 0.0
		}
		if n <= 0 {
			p.fail(s, name, v, "must be positive", fix)
			return 0.0
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
			p.fail(s, name, v, "unknown time unit", fix)
			return 0.0
		}
		return n / per.Seconds()
	},
	values: fixed("N/s, N/min or N/h, or off"),
	show:   func(v any) any { return formatRate(v.(float64)) },
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var list = Kind{
	parse:  func(_ *parser, _ *Setting, _, v string) any { return splitList(v) },
	values: fixed("a comma list"),
}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// preload is auto, off, or a comma list of Python module names.
var preload = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		switch strings.ToLower(v) {
		case "auto":
			return sandbox.DefaultPreload
		case "off":
			return sandbox.Preload{}
		}
		mods := splitList(v)
		for _, m := range mods {
			if !moduleName.MatchString(m) {
				p.fail(s, name, m, "is not a Python module name", "name modules such as numpy,matplotlib.pyplot, or use auto or off")
				return sandbox.Preload{}
			}
		}
		return sandbox.Preload{Modules: mods}
	},
	values: fixed("auto, off, or a comma list of module names"),
	show: func(v any) any {
		p := v.(sandbox.Preload)
		switch {
		case p.Auto:
			return "auto"
		case len(p.Modules) == 0:
			return "off"
		}
		return p.Modules
	},
}

// urls is a comma list of http(s) base URLs.
var urls = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		list := splitList(v)
		for _, v := range list {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
				p.fail(s, name, v, "not a base URL", "use http://host:port, such as http://runblock-executor:8080, or a comma list of them")
				return []string(nil)
			}
		}
		return list
	},
	values: fixed("a comma list of http(s) base URLs"),
}

// origins is a comma list of web origins: scheme://host[:port].
var origins = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		list := splitList(v)
		for i, v := range list {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				p.fail(s, name, v, "not a web origin", "use scheme://host[:port], such as https://notebook.example.com, or a comma list of them")
				return []string(nil)
			}
			list[i] = u.Scheme + "://" + u.Host
		}
		return list
	},
	values: fixed("a comma list of origins such as https://host:port"),
}

// tokens is a comma list of secrets of at least 16 characters.
var tokens = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		list := splitList(v)
		for _, v := range list {
			if strings.ContainsAny(v, " \t\r\n") || len(v) < 16 {
				p.fail(s, name, "", "holds a token that is too short or contains whitespace", "use random tokens of at least 16 characters, such as the output of `openssl rand -hex 32`, comma-separated")
				return []string(nil)
			}
		}
		return list
	},
	values: fixed("a comma list of tokens of 16 characters or more"),
}

func parseSecret(p *parser, s *Setting, name, v string) string {
	if strings.ContainsAny(v, " \t\r\n") {
		p.fail(s, name, "", "contains whitespace", "paste the value alone, without spaces or quotes")
	}
	return v
}

var secret = Kind{
	parse:  func(p *parser, s *Setting, name, v string) any { return parseSecret(p, s, name, v) },
	values: fixed(""),
}

// slackToken checks a Slack token's prefix, pointing at the right variable
// when a token of the other kind was pasted.
func slackToken(prefix, kind, otherPrefix, otherKind, otherVar string) Kind {
	return Kind{
		parse: func(p *parser, s *Setting, name, v string) any {
			v = parseSecret(p, s, name, v)
			switch {
			case strings.HasPrefix(v, prefix):
			case strings.HasPrefix(v, otherPrefix):
				p.fail(s, name, "", "holds "+otherKind+" ("+otherPrefix+"...)", "that one belongs in "+otherVar+"; put "+kind+" ("+prefix+"...) here")
			default:
				p.fail(s, name, "", "is not "+kind, "copy "+kind+" starting with "+prefix+" from your Slack app's settings")
			}
			return v
		},
		values: fixed("a token starting " + prefix),
	}
}

var discordToken = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		v = parseSecret(p, s, name, strings.TrimPrefix(v, "Bot "))
		switch {
		case strings.HasPrefix(v, "xoxb-") || strings.HasPrefix(v, "xapp-"):
			p.fail(s, name, "", "holds a Slack token", "put the Slack token in SLACK_BOT_TOKEN or SLACK_APP_TOKEN and the bot token from the Discord developer portal here")
		case strings.Count(v, ".") != 2:
			p.fail(s, name, "", "is not a Discord bot token", "copy the token from the Bot page of your application in the Discord developer portal")
		}
		return v
	},
	values: fixed("a bot token"),
}

var snowflake = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			p.fail(s, name, v, "not a Discord id", "use the numeric server id (Developer Mode, right-click the server, Copy Server ID)")
		}
		return v
	},
	values: fixed("a numeric server id"),
}

// apiURL is the base URL of a chat platform's API (a proxy, or another
// deployment of it), normalized to end in "/".
func apiURL(example string) Kind {
	return Kind{
		parse: func(p *parser, s *Setting, name, v string) any {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				p.fail(s, name, v, "not an http(s) base URL", "use "+example)
				return ""
			}
			if !strings.HasSuffix(v, "/") {
				v += "/"
			}
			return v
		},
		values: fixed("an http(s) base URL"),
	}
}

// publicURL is an https base URL, its path kept without a trailing
// slash.
var publicURL = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			p.fail(s, name, v, "not an https base URL", "use the URL given to `runblock manifest slack --url`, such as https://example.com/runblock")
			return ""
		}
		return strings.TrimSuffix(v, "/")
	},
	values: fixed("an https base URL"),
}

// shardID is a number, or a StatefulSet pod name ("runblock-bot-2", its
// ordinal last), so that the pod's name can be passed as it is. Parse
// checks it against DISCORD_SHARD_COUNT.
var shardID = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		ordinal := v
		if _, err := strconv.Atoi(v); err != nil {
			if i := strings.LastIndexByte(v, '-'); i > 0 {
				ordinal = v[i+1:]
			}
		}
		id, err := strconv.Atoi(ordinal)
		switch {
		case err != nil || id < 0:
			p.fail(s, name, v, "not a shard id", "use a number from 0, or a StatefulSet pod name ending in its ordinal")
		case ordinal != v:
			p.notes = append(p.notes, fmt.Sprintf("%s=%s read as shard %d (the ordinal at the end of the name)", name, v, id))
		}
		return id
	},
	values: fixed("a whole number from 0, or a pod name ending in one"),
}

// maxShards bounds DISCORD_SHARD_COUNT: Discord wants a shard per 2,500
// guilds at most, so this is room for millions.
const maxShards = 4096

var addr = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		_, port, err := net.SplitHostPort(v)
		if err == nil {
			_, err = strconv.ParseUint(port, 10, 16)
		}
		if err != nil {
			p.fail(s, name, v, "not a listen address", "use host:port such as :8080 or 127.0.0.1:8080")
		}
		return v
	},
	values: fixed("host:port"),
}

var level = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			p.fail(s, name, v, "not a log level", "use debug, info, warn or error")
		}
		return l
	},
	values: fixed("debug, info, warn or error"),
}

func oneOf(allowed ...string) Kind {
	values := strings.Join(allowed, " or ")
	return Kind{
		parse: func(p *parser, s *Setting, name, v string) any {
			v = strings.ToLower(v)
			if !slices.Contains(allowed, v) {
				p.fail(s, name, v, "unknown value", "use "+values)
			}
			return v
		},
		values: fixed(values),
	}
}

// python checks that RUNBLOCK_PYTHON names an interpreter that exists.
var python = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		const fix = "set it to a Python 3 interpreter such as /usr/bin/python3, or unset it to use python3 from PATH"
		if !strings.ContainsRune(v, '/') {
			if _, err := exec.LookPath(v); err != nil {
				p.fail(s, name, v, "not found on PATH", fix)
			}
			return v
		}
		st, err := os.Stat(v)
		switch {
		case err != nil:
			p.fail(s, name, v, "no such file", fix)
		case st.IsDir() || st.Mode()&0o111 == 0:
			p.fail(s, name, v, "not an executable file", fix)
		}
		return v
	},
	values: fixed("a path or a command name"),
}

// storeLocation is sqlite:PATH or a PostgreSQL URL (store.ParseLocation).
var storeLocation = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		if _, err := store.ParseLocation(v); err != nil {
			p.fail(s, name, "", "is not a store", "use sqlite:/var/lib/runblock/runblock.db or postgres://USER:PASSWORD@HOST:5432/DB ("+err.Error()+")")
		}
		return v
	},
	values: fixed("sqlite:PATH or postgres://..."),
	show: func(v any) any {
		loc, err := store.ParseLocation(v.(string))
		if v == "" || err != nil {
			return secretState(v)
		}
		return loc.Redacted()
	},
	credentials: func(v string) []string {
		loc, err := store.ParseLocation(v)
		switch {
		case err != nil:
			return []string{v}
		case loc.Driver == "sqlite":
			return nil
		}
		u, err := url.Parse(loc.URL)
		if err != nil {
			return []string{v}
		}
		var out []string
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
		}
		for _, pw := range u.Query()["password"] {
			if pw != "" {
				out = append(out, pw)
			}
		}
		return out
	},
}

// storeKey is a 32-byte key in hex or base64 (store.ParseKey).
var storeKey = Kind{
	parse: func(p *parser, s *Setting, name, v string) any {
		if _, err := store.ParseKey(v); err != nil {
			p.fail(s, name, "", "is not a 32-byte key in hex or base64", store.KeyHelp)
		}
		return v
	},
	values: fixed("64 hex digits or 44 base64 characters"),
}
