package console

import (
	"context"
	"strconv"
	"time"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/executor"
	ipynb "github.com/runblock/runblock/formatting/notebook"
)

// The console is one session (bots/internal/answer/session.go): each
// message with code is the next cell, run with the earlier successful
// cells as its replay, and its reply starts with the cell's number.
// %reset, as a whole message, starts the session fresh; "%export PATH"
// writes it to PATH as a Jupyter notebook (export.go).

// resetCommand starts the console's session fresh.
const resetCommand = "%reset"

// session is the console's record of its cells.
type session struct {
	id    string
	cells int                // cells run
	ok    []executor.Request // the successful ones, the replay of the next
	nb    []ipynb.Cell       // every cell with its result, files left out, for %export
}

func newSession() session {
	return session{id: "console:" + strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// full reports whether the session keeps no more cells.
func (s *session) full() bool { return s.cells >= answer.MaxCells }

// next is the Session of the next cell.
func (s *session) next() *executor.Session {
	return &executor.Session{ID: s.id, Replay: append([]executor.Request{}, s.ok...)}
}

// ran records req as the next cell with its result, and returns its
// reply's header.
func (s *session) ran(req executor.Request, res executor.Result) string {
	s.cells++
	kept := res
	kept.Files = nil
	s.nb = append(s.nb, ipynb.Cell{Kind: ipynb.Code, Source: req.Code, Count: s.cells, Result: &kept})
	if res.Success && (res.Session == nil || !res.Session.Ended) {
		req.Session = nil
		s.ok = append(s.ok, req)
	}
	return answer.CellHeader(s.cells, res.Session)
}

// reset answers %reset: the session starts fresh, its live process ended
// when the runner can end it.
func (b *Bot) reset(ctx context.Context) string {
	end := b.cfg.End
	if e, ok := b.runner.(answer.Ender); ok && end == nil {
		end = e.End
	}
	if end != nil {
		if err := end(ctx, b.session.id); err != nil {
			b.log.Warn("ending the session's live process", "err", err)
		}
	}
	b.session = session{id: b.session.id}
	return answer.ResetText
}
