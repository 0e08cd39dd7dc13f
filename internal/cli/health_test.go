package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/httpserver"
)

func TestHealthCommand(t *testing.T) {
	// A service's own /readyz, served by the real httpserver, answering
	// what each case sets.
	var rd atomic.Pointer[httpserver.Readiness]
	srv := httpserver.New(httpserver.Config{Addr: "127.0.0.1:0", Readiness: func() httpserver.Readiness { return *rd.Load() }})
	if err := srv.Open(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	addr, url := srv.Addr(), "http://"+srv.Addr()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close() // nothing listens there any more

	ready := httpserver.Readiness{Ready: true, Adapters: map[string]bool{"slack": true}}
	draining := httpserver.Readiness{Draining: true, Adapters: map[string]bool{"slack": true, "discord": false}}
	tests := []struct {
		name   string
		args   []string
		addr   string
		rd     httpserver.Readiness
		code   int
		stderr string
	}{
		{name: "ready", addr: addr, rd: ready},
		{name: "empty host is loopback", addr: ":" + port, rd: ready},
		{name: "unspecified host is loopback", addr: "0.0.0.0:" + port, rd: ready},
		{name: "unspecified IPv6 host is loopback", addr: "[::]:" + port, rd: ready},
		{name: "--url overrides", args: []string{"--url", url + "/readyz"}, addr: closedAddr, rd: ready},
		{name: "not ready", addr: addr, rd: draining, code: 1, stderr: "503 Service Unavailable: draining, discord not connected"},
		{name: "--url base URL asks /readyz", args: []string{"--url", url}, addr: closedAddr, rd: draining, code: 1, stderr: url + "/readyz answered 503"},
		{name: "--url base URL with a slash", args: []string{"--url", url + "/"}, addr: closedAddr, rd: ready},
		{name: "--url path not found", args: []string{"--url", url + "/nope"}, rd: ready, code: 1, stderr: "404"},
		{name: "nothing listening", addr: closedAddr, rd: ready, code: 1, stderr: closedAddr},
		{name: "no address", rd: ready, code: 2, stderr: "RUNBLOCK_HTTP_ADDR is not set"},
		{name: "bad address setting", addr: "8080", rd: ready, code: 2, stderr: "RUNBLOCK_HTTP_ADDR"},
		{name: "bad url", args: []string{"--url", "::"}, rd: ready, code: 1, stderr: "--url"},
		{name: "arguments", args: []string{"extra"}, addr: addr, rd: ready, code: 2, stderr: "no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd.Store(&tt.rd)
			env := config.Env{}
			if tt.addr != "" {
				env["RUNBLOCK_HTTP_ADDR"] = tt.addr
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"health"}, tt.args...), env, nil, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.stderr)
			}
			if code != 0 && strings.Count(strings.TrimRight(stderr.String(), "\n"), "\n") != 0 {
				t.Errorf("stderr is more than one line: %q", stderr.String())
			}
			if code == 0 && stdout.String() != "ready\n" {
				t.Errorf("stdout %q, want ready", stdout.String())
			}
		})
	}
}
