// Package httpserver serves runblock's operational endpoints: /healthz,
// /readyz, /metrics, for the Slack Events API /slack/ and, in
// `runblock executor`, the execute API.
package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Readiness is what /readyz reports.
type Readiness struct {
	Ready bool `json:"ready"`
	// Isolation is the executor's isolation tier ("full", "reduced", "unisolated").
	Isolation string `json:"isolation"`
	// Adapters maps each configured adapter to whether it is connected.
	Adapters map[string]bool `json:"adapters"`
	// Store is whether the store (RUNBLOCK_STORE) answers, when there is
	// one: without it the bot is not ready.
	Store    *bool `json:"store,omitempty"`
	Draining bool  `json:"draining,omitempty"`
	// Load is the executor service's capacity and queue (`runblock
	// executor`); remote runners balance on it.
	Load *Load `json:"load,omitempty"`
}

// Load is an executor service's capacity and how much of it is in use.
type Load struct {
	Capacity  int `json:"capacity"`   // runs at once
	Running   int `json:"running"`    // runs now
	Queued    int `json:"queued"`     // jobs waiting
	QueueSize int `json:"queue_size"` // jobs that may wait
	// Sessions counts the live sessions (their processes held between
	// cells) when sessions are on.
	Sessions int `json:"sessions"`
}

// Config configures the Server.
type Config struct {
	Addr string // listen address, such as ":8080"
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// Readiness reports /readyz; nil always reports ready.
	Readiness func() Readiness
	// Slack, when set, serves everything under /slack/ (the Events API and
	// interactivity endpoints).
	Slack http.Handler
	// API, when set, serves every other path (the execute API of `runblock
	// executor`). Its handlers set their own write deadlines, as a run may
	// wait in the queue longer than WriteTimeout.
	API    http.Handler
	Logger *slog.Logger
}

// Server owns the listener of the operational endpoints.
type Server struct {
	cfg    Config
	log    *slog.Logger
	srv    *http.Server
	ln     net.Listener
	served chan error
}

// New returns a Server; it does not listen until Open.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.Slack != nil {
		mux.Handle("/slack/", cfg.Slack)
	}
	if cfg.API != nil {
		mux.Handle("/", cfg.API)
	}
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd := Readiness{Ready: true}
	if s.cfg.Readiness != nil {
		rd = s.cfg.Readiness()
	}
	w.Header().Set("Content-Type", "application/json")
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if err := json.NewEncoder(w).Encode(rd); err != nil {
		s.log.Debug("writing /readyz", "err", err)
	}
}

// Open listens on the configured address (failing at once when it cannot)
// and serves in the background.
func (s *Server) Open() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("http: listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.served = make(chan error, 1)
	go func() { s.served <- s.srv.Serve(ln) }()
	s.log.Info("http listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address the server listens on, once open.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the server, letting open requests finish until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("http: shutdown: %w", err), s.srv.Close())
	}
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("http: serve: %w", serr))
	}
	return err
}
