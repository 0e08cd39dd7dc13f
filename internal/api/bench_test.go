package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/api"
)

// BenchmarkOverhead measures what the HTTP API adds to a run: p50 of POST
// /v1/run against p50 of the same run in process, with a runner that does
// nothing (the API's own cost: HTTP, JSON, the scheduler) and with the
// real sandbox (print(1)).
//
//	go test ./internal/api -run '^$' -bench Overhead -benchtime 300x
func BenchmarkOverhead(b *testing.B) {
	noop := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "1\n"}, nil
	})
	b.Run("noop", func(b *testing.B) { overhead(b, noop) })
	b.Run("sandbox", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		ex, err := sandbox.New(ctx, sandbox.Config{Pool: 2, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer ex.Close()
		overhead(b, ex)
	})
}

func overhead(b *testing.B, r executor.Runner) {
	s := open(b, r, executor.Config{Concurrency: 2}, api.Config{})
	client := &http.Client{}
	req := executor.Request{Code: "print(1)"}
	var direct, viaHTTP []time.Duration
	inProcess := func() {
		start := time.Now()
		if _, err := r.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
	}
	overHTTP := func() {
		start := time.Now()
		resp, err := client.Post(s.url+"/v1/run", "application/json", strings.NewReader(`{"code":"print(1)"}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		viaHTTP = append(viaHTTP, time.Since(start))
	}
	// Alternate which goes first, so that both meet the sandbox pool in
	// the same state on average.
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			inProcess()
			overHTTP()
		} else {
			overHTTP()
			inProcess()
		}
		i++
	}
	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	d, h := p50(direct), p50(viaHTTP)
	b.ReportMetric(float64(d.Microseconds())/1000, "p50-inprocess-ms")
	b.ReportMetric(float64(h.Microseconds())/1000, "p50-http-ms")
	b.ReportMetric(float64((h-d).Microseconds())/1000, "overhead-ms")
}
