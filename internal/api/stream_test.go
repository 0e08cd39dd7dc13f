package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
)

// streamed is a streamed answer as a client reads it.
type streamed struct {
	status      int
	contentType string
	events      []wire.OutputEvent // before the last line
	last        []byte
}

// postStream posts body to /v1/run asking for a stream and reads the
// answer line by line; seen, when set, is called at each output event.
func postStream(t *testing.T, url, body string, seen func(wire.OutputEvent), headers ...string) streamed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/run", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", wire.NDJSON)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := streamed{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type")}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the stream ended without its last line (%d events): %v", len(s.events), err)
		}
		var ev wire.OutputEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if ev.Event == "" {
			s.last = line
			break
		}
		if ev.Event != wire.OutputEventName || ev.Stdout == "" && ev.Stderr == "" {
			t.Errorf("event %q: want output, and some", line)
		}
		s.events = append(s.events, ev)
		if seen != nil {
			seen(ev)
		}
	}
	if rest, err := br.ReadBytes('\n'); len(rest) > 0 || err == nil {
		t.Errorf("the stream goes on after its last line: %q", rest)
	}
	return s
}

// output is the events' output together.
func (s streamed) output() (stdout, stderr string) {
	for _, ev := range s.events {
		stdout += ev.Stdout
		stderr += ev.Stderr
	}
	return stdout, stderr
}

// withoutDuration is an answer with its duration_ms taken out.
func withoutDuration(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	delete(m, "duration_ms")
	return m
}

// TestStreamShowsOutputAsItComes: a run that prints, then waits (until its
// time limit, which the test sets), streams its output before its end;
// the last line is the answer the same request gets without streaming,
// and the events' output is the start of the result's. A run that ends at
// once streams its answer too.
func TestStreamShowsOutputAsItComes(t *testing.T) {
	s := python(t)
	for _, tc := range []struct {
		name, code     string
		stdout, stderr string // the first event's, when it must come before the end
	}{
		{"prints then waits", "import sys, time\nprint('first ✓', flush=True)\nprint('warned', file=sys.stderr, flush=True)\ntime.sleep(60)", "first ✓\n", "warned\n"},
		{"ends at once", "print('hi')\n1/0", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"code": tc.code, "timeout": 1.5})
			got := postStream(t, s.url, string(body), nil)
			if got.status != http.StatusOK || got.contentType != wire.NDJSON {
				t.Fatalf("status %d, Content-Type %q: want a 200 stream", got.status, got.contentType)
			}
			plain := post(t, s.url+"/v1/run", string(body))
			if plain.status != http.StatusOK || plain.header.Get("Content-Type") != "application/json" {
				t.Fatalf("without streaming: %d %q", plain.status, plain.header.Get("Content-Type"))
			}
			last, want := withoutDuration(t, got.last), withoutDuration(t, plain.body)
			if !reflect.DeepEqual(last, want) {
				t.Errorf("last line %s\nwant the plain answer %s", got.last, plain.body)
			}
			stdout, stderr := got.output()
			if !strings.HasPrefix(last["stdout"].(string), stdout) || !strings.HasPrefix(last["stderr"].(string), stderr) {
				t.Errorf("streamed %q and %q: not the start of the result's %q and %q", stdout, stderr, last["stdout"], last["stderr"])
			}
			if tc.stdout != "" && (stdout != tc.stdout || stderr != tc.stderr) {
				t.Errorf("streamed %q and %q before the end, want %q and %q (events %+v)", stdout, stderr, tc.stdout, tc.stderr, got.events)
			}
		})
	}
}

// TestStreamErrorsBeforeTheRunKeepTheirStatus: a request refused before
// its run starts is answered as without streaming: its status and a JSON
// error.
func TestStreamErrorsBeforeTheRunKeepTheirStatus(t *testing.T) {
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Success: true}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{Limits: wire.Limits{MaxCodeBytes: 1 << 10}, Tokens: []string{tokenA}})
	auth := "Bearer " + tokenA
	for _, tc := range []struct {
		name, body, auth string
		status           int
		code             string
	}{
		{"not json", `{"code":`, auth, http.StatusBadRequest, "bad_request"},
		{"unknown field", `{"code":"1","colours":true}`, auth, http.StatusBadRequest, "bad_request"},
		{"negative memory", `{"code":"1","memory":-1}`, auth, http.StatusBadRequest, "bad_request"},
		{"wrong token", `{"code":"1"}`, "Bearer nope", http.StatusUnauthorized, "unauthorized"},
		{"too large", `{"code":"` + strings.Repeat("x", 2<<10) + `"}`, auth, http.StatusRequestEntityTooLarge, "too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, s.url+"/v1/run", tc.body, "Accept", wire.NDJSON, "Authorization", tc.auth)
			if resp.status != tc.status || resp.header.Get("Content-Type") != "application/json" || resp.json(t)["code"] != tc.code {
				t.Errorf("%d %q %s: want %d and code %q", resp.status, resp.header.Get("Content-Type"), resp.body, tc.status, tc.code)
			}
		})
	}
}

// TestStreamFailureAfterTheStartIsTheLastLine: once the stream's 200 is
// sent, a failure of the run is its last line, the error answer it would
// have been.
func TestStreamFailureAfterTheStartIsTheLastLine(t *testing.T) {
	shown := make(chan struct{})
	r := canaryOK(func(ctx context.Context, _ executor.Request) (executor.Result, error) {
		if out := executor.OutputOf(ctx); out != nil {
			out("partial\n", "")
		}
		select {
		case <-shown:
		case <-ctx.Done():
		}
		return executor.Result{}, errors.New("the sandbox broke")
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{})
	got := postStream(t, s.url, `{"code":"1"}`, func(wire.OutputEvent) { close(shown) })
	if got.status != http.StatusOK || got.contentType != wire.NDJSON || len(got.events) != 1 || got.events[0].Stdout != "partial\n" {
		t.Fatalf("%d %q, events %+v: want a 200 stream with the output", got.status, got.contentType, got.events)
	}
	if string(got.last) != `{"error":"internal error","code":"internal"}`+"\n" {
		t.Errorf("last line %q: want the internal error answer", got.last)
	}
}

// TestStreamToAClientThatDoesNotReadEndsTheRun: a client that asks for a
// stream and never reads it pins neither the run nor its output: the
// event that finds the connection full fails at its deadline, which ends
// the run.
func TestStreamToAClientThatDoesNotReadEndsTheRun(t *testing.T) {
	big := strings.Repeat("x", 32<<20)
	ended := make(chan error, 1)
	r := canaryOK(func(ctx context.Context, _ executor.Request) (executor.Result, error) {
		if out := executor.OutputOf(ctx); out != nil {
			for i := 1; i <= 32; i++ {
				out(big[:i<<20], "")
			}
		}
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(testTimeout):
			ended <- errors.New("never ended")
		}
		return executor.Result{}, ctx.Err()
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{AnswerGrace: 300 * time.Millisecond, AnswerRate: 1 << 40})
	addr := strings.TrimPrefix(s.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	body := `{"code":"1"}`
	fmt.Fprintf(c, "POST /v1/run HTTP/1.1\r\nHost: %s\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n%s", addr, wire.NDJSON, len(body), body)
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the run: %v, want it ended once the stream stalled", err)
	}
}
