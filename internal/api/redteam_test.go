package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/api"
)

// TestTokenInQueryStringRefused: a token is accepted only in the
// Authorization header, never from the URL (where proxies and access logs
// keep it), on every API, and never reaches the log.
func TestTokenInQueryStringRefused(t *testing.T) {
	const secret = "s3cret-query-token"
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		t.Error("a request with its token in the URL reached the runner")
		return executor.Result{}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{Tokens: []string{secret}})
	for _, url := range []string{
		"/v1/run?token=" + secret,
		"/v1/run?access_token=" + secret,
		"/v1/run?api_key=" + secret + "&token=" + secret,
		"/eval?token=" + secret,
		"/api/v2/execute?access_token=" + secret,
	} {
		resp := post(t, s.url+url, `{"code":"1"}`, "Authorization", "Bearer ?token="+secret[:4])
		if resp.status != http.StatusUnauthorized || strings.Contains(string(resp.body), secret) {
			t.Errorf("POST %s: %d %s, want 401 that does not echo the token", url, resp.status, resp.body)
		}
	}
	if strings.Contains(s.log.String(), secret) {
		t.Errorf("the token appears in the log:\n%s", s.log.String())
	}
}
