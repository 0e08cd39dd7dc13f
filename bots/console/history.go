package console

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/executor"
	ipynb "github.com/runblock/runblock/formatting/notebook"
)

// The console is one session (bots/internal/answer/session.go): each
// message with code is the next cell, run with the earlier successful
// cells as its replay, and its reply starts with the cell's number.
// The words that reset a thread in chat (answer.IsReset), or IPython's
// %reset, as a whole message, start the session fresh.
// "%export PATH" writes it to PATH as a Jupyter notebook (export.go).

// resetCommand starts the console's session fresh, as reset does.
const resetCommand = "%reset"

// isReset reports whether msg asks for a fresh session.
func isReset(msg string) bool {
	return answer.IsReset(msg) || strings.TrimSpace(msg) == resetCommand
}

// history is the console's record of the cells of its session.
type history struct {
	id    string
	cells int                // cells run
	ok    []executor.Request // the successful ones, the replay of the next
	okAt  []int              // the number of each of ok's cells
	// live maps the number the live process gave each of its cells, which
	// its tracebacks name ("<cell 2>"), to the cell's number here: they
	// differ once a rebuild replayed only the successful cells.
	live map[int]int
	nb   []ipynb.Cell // every cell with its result, files left out, for %export
}

func newHistory() history {
	return history{id: "console:" + strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// full reports whether the history keeps no more cells.
func (h *history) full() bool { return h.cells >= answer.MaxCells }

// next is the Session of the next cell.
func (h *history) next() *executor.Session {
	return &executor.Session{ID: h.id, Replay: append([]executor.Request{}, h.ok...)}
}

// ran records req as the next cell with its result, and returns its
// reply's header and the result with its tracebacks naming the cells by
// the numbers their replies show.
func (h *history) ran(req executor.Request, res executor.Result) (string, executor.Result) {
	h.cells++
	if info := res.Session; info != nil {
		if h.live == nil || info.Cell == info.Restored+1 {
			// A new process: it replayed the first Restored of ok, then
			// ran this cell.
			h.live = map[int]int{}
			for i := range min(info.Restored, len(h.okAt)) {
				h.live[i+1] = h.okAt[i]
			}
		}
		h.live[info.Cell] = h.cells
		res.Stderr, res.Error = h.renumber(res.Stderr), h.renumber(res.Error)
	}
	kept := res
	kept.Files = nil
	h.nb = append(h.nb, ipynb.Cell{Kind: ipynb.Code, Source: req.Code, Count: h.cells, Result: &kept})
	if res.Success && (res.Session == nil || !res.Session.Ended) {
		req.Session = nil
		h.ok = append(h.ok, req)
		h.okAt = append(h.okAt, h.cells)
	}
	return answer.CellHeader(h.cells, res.Session), res
}

// cellName is how python names a cell's code in a traceback.
var cellName = regexp.MustCompile(`<cell (\d+)>`)

// renumber rewrites the cells a traceback names from the live process's
// numbers to the console's.
func (h *history) renumber(text string) string {
	return cellName.ReplaceAllStringFunc(text, func(m string) string {
		n, err := strconv.Atoi(cellName.FindStringSubmatch(m)[1])
		if at, ok := h.live[n]; err == nil && ok {
			return "<cell " + strconv.Itoa(at) + ">"
		}
		return m
	})
}

// reset answers reset or %reset: the session starts fresh, its live process ended
// when the runner can end it.
func (b *Bot) reset(ctx context.Context) string {
	end := b.cfg.End
	if e, ok := b.runner.(answer.Ender); ok && end == nil {
		end = e.End
	}
	if end != nil {
		if err := end(ctx, b.history.id); err != nil {
			b.log.Warn("ending the session's live process", "err", err)
		}
	}
	b.history = history{id: b.history.id}
	if b.cfg.FilesDir == "" {
		b.filesDir = "" // the new cells' files go to a fresh directory
	}
	return answer.ResetText
}
