package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/runblock/runblock/internal/httpserver"
)

// healthTimeout bounds `runblock health`'s request: a health check that
// hangs is a failed one.
const healthTimeout = 5 * time.Second

// runHealth is `runblock health`: the running service's own /readyz, for
// a container's health check. It exits 0 when the service answers 200, and
// 1 with one line saying what it answered otherwise.
func runHealth(ctx context.Context, c *invocation, args []string) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	target := fs.String("url", "", "the URL to ask, /readyz when it has no path (default http://RUNBLOCK_HTTP_ADDR/readyz, on 127.0.0.1 when its host is empty or unspecified)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "runblock health: takes no arguments but --url\n")
		return 2
	}
	u := withReadyz(*target)
	if u == "" {
		var err error
		if u, err = readyzURL(c.cfg.HTTPAddr); err != nil {
			fmt.Fprintf(c.stderr, "runblock health: %v\n", err)
			return 2
		}
	}
	if err := checkHealth(ctx, u); err != nil {
		fmt.Fprintf(c.stderr, "runblock health: %v\n", err)
		return 1
	}
	fmt.Fprintln(c.stdout, "ready")
	return 0
}

// readyzURL is the /readyz of a service listening on addr, asked on
// loopback when addr's host is empty or unspecified (":8080", "0.0.0.0:8080").
func readyzURL(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("RUNBLOCK_HTTP_ADDR is not set, so there is no /readyz to ask: set it as the service has it, or give --url")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("RUNBLOCK_HTTP_ADDR=%q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}

// withReadyz is target with the path /readyz when it has none, so that
// --url takes the service's base URL as well as a URL to ask.
func withReadyz(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return target
	}
	u.Path = "/readyz"
	return u.String()
}

// checkHealth GETs u: nil on 200, else an error saying what came back.
func checkHealth(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("--url %q: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	msg := fmt.Sprintf("%s answered %s", u, resp.Status)
	var rd httpserver.Readiness
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&rd) == nil {
		msg += ": " + notReady(rd)
	}
	return errors.New(msg)
}

// notReady says why a Readiness is not ready.
func notReady(rd httpserver.Readiness) string {
	var why []string
	if rd.Draining {
		why = append(why, "draining")
	}
	for _, name := range slices.Sorted(maps.Keys(rd.Adapters)) {
		if !rd.Adapters[name] {
			why = append(why, name+" not connected")
		}
	}
	if len(why) == 0 {
		why = append(why, "not ready")
	}
	return strings.Join(why, ", ")
}
