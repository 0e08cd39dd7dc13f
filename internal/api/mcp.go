package api

import (
	"context"
	"net/http"
	"time"

	"github.com/runblock/runblock/internal/mcp"
)

// clientKey carries a request's client, as the fair queue knows it, to the
// MCP server's tool.
type clientKey struct{}

// mcpHandler serves MCP's streamable HTTP transport at /mcp behind the
// API's tokens, each token one user of the fair queue as for /v1/run. It is
// stateless (no session held between requests, nothing a client can pile
// up) and answers with plain JSON, each write under a deadline sized to it
// as the other endpoints' answers are.
func (h *Handler) mcpHandler(mc mcp.Config) http.Handler {
	mc.Scheduler, mc.Limits = h.cfg.Scheduler, h.cfg.Limits
	if mc.Sessions == nil && h.cfg.Sessions != nil {
		mc.Sessions = h.cfg.Sessions
	}
	if mc.PythonVersion == "" {
		mc.PythonVersion = h.cfg.PythonVersion
	}
	if mc.Logger == nil {
		mc.Logger = h.log
	}
	next := mcp.HTTPHandler(mc, func(r *http.Request) string {
		client, _ := r.Context().Value(clientKey{}).(string)
		return client
	})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if ae := h.admit(r); ae != nil {
			h.refused(r, ae)
			nativeErrors(&answer{ResponseWriter: rw, h: h, r: r}, ae.status, ae.message)
			return
		}
		client, ok := h.client(r)
		if !ok {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="runblock"`)
			http.Error(rw, "missing or wrong bearer token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
		if h.cfg.Draining() {
			rw.Header().Set("Retry-After", "1")
			http.Error(rw, "the executor is shutting down, try another one", http.StatusServiceUnavailable)
			return
		}
		// A run may wait in the queue: the server's WriteTimeout must not
		// cut it; each write gets a deadline of its own.
		if err := http.NewResponseController(rw).SetWriteDeadline(time.Time{}); err != nil {
			h.log.Debug("clearing write deadline", "err", err)
		}
		w := &mcpAnswer{ResponseWriter: rw, a: &answer{ResponseWriter: rw, h: h, r: r}}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, client)))
	})
}

// mcpAnswer writes the MCP server's answers within a deadline proportional
// to their size, so a client that never reads cannot pin one.
type mcpAnswer struct {
	http.ResponseWriter
	a *answer
}

func (w *mcpAnswer) Write(p []byte) (int, error) {
	if err := http.NewResponseController(w.ResponseWriter).SetWriteDeadline(w.a.deadline(int64(len(p)))); err != nil {
		w.a.h.log.Debug("setting the answer's write deadline", "err", err)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap is the server's own writer, for http.ResponseController.
func (w *mcpAnswer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
