package answer

import (
	"context"
	"log/slog"

	"github.com/runblock/runblock/executor"
	ipynb "github.com/runblock/runblock/formatting/notebook"
)

// Export: a thread's session leaves as a Jupyter notebook, posted in the
// thread as a file: one code cell per cell the flow records, with its
// source, its outputs and its number. A cell recovered from the platform
// (after a restart) has its source and no outputs.

// ExportName is the file an exported session is posted as.
const ExportName = "session.ipynb"

// Notebook returns the cells of session id as an executed notebook, and
// how many cells it has.
func (f *Flow[S]) Notebook(ctx context.Context, id string) ([]byte, int, error) {
	t := f.sessTurns.Take(id)
	t.Wait(ctx)
	cells := f.nb.notebook(id)
	t.Done()
	b, err := ipynb.Write(cells)
	return b, len(cells), err
}

// notebook returns the record of session id as notebook cells.
func (nb *notebook[S]) notebook(id string) []ipynb.Cell {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	el, ok := nb.byID[id]
	if !ok {
		return nil
	}
	th := el.Value.(*thread[S])
	cells := make([]ipynb.Cell, len(th.cells))
	for i, c := range th.cells {
		cells[i] = ipynb.Cell{Kind: ipynb.Code, Source: c.ex.Code, Result: c.res}
		if c.res != nil {
			cells[i].Count = i + 1
		}
	}
	return cells
}

// export answers an export request: the session's notebook, posted in
// its thread.
func (f *Flow[S]) export(ctx context.Context, log *slog.Logger, req Request[S]) {
	if !f.sessions(req) {
		f.notify(ctx, log, req.Src, NothingToExport)
		return
	}
	b, n, err := f.Notebook(ctx, req.Session)
	switch {
	case err != nil:
		log.Error("writing a session's notebook", "session", req.Session, "err", err)
		return
	case n == 0:
		f.notify(ctx, log, req.Src, NothingToExport)
		return
	}
	file := executor.File{Path: ExportName, Size: int64(len(b)), MIME: "application/x-ipynb+json", Content: b}
	if _, err := f.p.Send(ctx, req.Src, Record[S]{}, Reply{Text: ExportText(n), Files: []executor.File{file}}); err != nil {
		log.Error("sending a session's notebook", "err", err)
		return
	}
	f.cfg.Replied()
	log.Info("session exported", "session", req.Session, "cells", n)
}

// ExportText is the line an exported session of n cells is posted with.
func ExportText(n int) string {
	return "This thread's session as a Jupyter notebook: " + plural(n, "cell") + "."
}

// NothingToExport answers an export where there is no session with cells.
const NothingToExport = "There is nothing to export here: run a cell in this thread first."
