package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/executor/wire"
)

// sessionKey is the session manager's key of a client's session id.
func sessionKey(client, id string) string { return "api:" + client + ":" + id }

func checkSessionID(id string) error {
	if !session.ValidID(id) {
		return badRequest("session id %q: use 1 to %d characters, %s", id, session.MaxIDLength, session.IDChars)
	}
	return nil
}

// Sessions is what the API needs of the session manager.
type Sessions interface {
	// EndSession ends a session, reporting whether there was one.
	EndSession(ctx context.Context, id string) (bool, error)
	// Live counts the sessions with a live process, for /readyz.
	Live() int
}

func nativeErrors(w *answer, status int, message string) {
	writeJSON(w, status, wire.ErrorResponse{Error: message, Code: wire.ErrorCode(status)})
}

func (h *Handler) native(w *answer, r *http.Request, client string) error {
	var body wire.RunRequest
	if err := decode(r, &body, true); err != nil {
		return err
	}
	req, err := h.nativeRequest(body, "")
	if err != nil {
		return err
	}
	switch {
	case body.Session == "" && body.Replay != nil:
		return badRequest("field \"replay\" needs a \"session\"")
	case body.Session == "":
	case h.cfg.Sessions == nil:
		// Sessions are off here: the run goes alone, and its answer
		// says nothing of a session.
	default:
		if err := checkSessionID(body.Session); err != nil {
			return err
		}
		req.Session = &executor.Session{ID: sessionKey(client, body.Session)}
		if body.Replay != nil {
			req.Session.Replay = make([]executor.Request, len(body.Replay))
		}
		for i, cell := range body.Replay {
			field := fmt.Sprintf("replay[%d].", i)
			if cell.Session != "" || cell.Replay != nil {
				return badRequest("%s: a replayed cell has no session or replay of its own", strings.TrimSuffix(field, "."))
			}
			if req.Session.Replay[i], err = h.nativeRequest(cell, field); err != nil {
				return err
			}
		}
	}
	job := executor.Job{User: client, Request: req}
	ctx, stop := w.streamRun(r.Context(), &job)
	res, err := h.cfg.Scheduler.Submit(ctx, job)
	stop()
	if err != nil {
		return err
	}
	if res.Session != nil {
		info := *res.Session
		info.ID = body.Session
		res.Session = &info
	}
	writeJSON(w, http.StatusOK, runAnswer{Result: res, TimeoutLimitMS: res.TimeoutLimit.Milliseconds()})
	return nil
}

// nativeRequest checks body (a replayed cell's fields named after field,
// such as "replay[2].") and turns it into an executor.Request: with files
// or arguments, it runs as `python -c CODE ARGS...` would.
func (h *Handler) nativeRequest(body wire.RunRequest, field string) (executor.Request, error) {
	return h.cfg.Limits.Request(wire.Program{
		Launch: executor.LaunchCode, Code: body.Code, Args: body.Args, Stdin: body.Stdin, Files: body.Files, Field: field,
		Timeout: time.Duration(body.Timeout), MemoryBytes: body.Memory, Colour: body.Colour, Script: body.Script,
	})
}

// runAnswer is /v1/run's answer, sized and lightened as it is written.
type runAnswer wire.RunResponse

// endSession is DELETE /v1/sessions/{id}: it ends the client's session id.
func (h *Handler) endSession(w *answer, r *http.Request, client string) error {
	id := r.PathValue("id")
	if err := checkSessionID(id); err != nil {
		return err
	}
	if h.cfg.Sessions == nil {
		return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("no session %q: sessions are off on this executor", id)}
	}
	found, err := h.cfg.Sessions.EndSession(r.Context(), sessionKey(client, id))
	if err != nil {
		return err
	}
	if !found {
		return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("no session %q", id)}
	}
	writeJSON(w, http.StatusOK, wire.EndResponse{Session: id, Ended: true})
	return nil
}
