package discord

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// rebase sends the session's requests for Discord's API to another base
// URL (Config.APIURL): a REST proxy, or a test's fake. discordgo builds its
// URLs from package variables; rewriting them here, per session, leaves
// those untouched, so sessions with different endpoints can share a
// process. The gateway URL comes from the API (GET /gateway), so it follows.
type rebase struct {
	from string   // discordgo.EndpointDiscord, "https://discord.com/"
	to   *url.URL // Config.APIURL
	next http.RoundTripper
}

func newRebase(apiURL string, next http.RoundTripper) (*rebase, error) {
	to, err := url.Parse(apiURL)
	if err != nil || (to.Scheme != "http" && to.Scheme != "https") || to.Host == "" {
		return nil, fmt.Errorf("APIURL %q is not an http(s) URL", apiURL)
	}
	to.Path = strings.TrimSuffix(to.Path, "/")
	to.RawPath = strings.TrimSuffix(to.RawPath, "/")
	return &rebase{from: discordgo.EndpointDiscord, to: to, next: next}, nil
}

func (t *rebase) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(r.URL.String(), t.from) {
		return t.next.RoundTrip(r) // the CDN, an attachment's URL
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = t.to.Scheme, t.to.Host, ""
	if r.URL.RawPath != "" {
		r.URL.RawPath = t.to.EscapedPath() + r.URL.RawPath
	}
	r.URL.Path = t.to.Path + r.URL.Path
	return t.next.RoundTrip(r)
}
