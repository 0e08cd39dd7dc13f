package answer

import (
	"context"
	"log/slog"
	"path"
	"strings"

	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	ipynb "github.com/runblock/runblock/formatting/notebook"
)

// Import: a Jupyter notebook (.ipynb) attached to a message of a thread,
// with no code in the message, runs its code cells in order as cells of
// the thread's session, stopping at the first that fails as Jupyter's
// "Run All" does. One reply sums up each cell's result, as much as the
// platform's text takes, and carries the executed notebook back under
// its own name. The message's other files go into the first cell's run.

// MaxImportCells is the most code cells an import runs.
const MaxImportCells = 50

// importLines bounds the output each cell shows in an import's reply.
const importLines = 3

// hasNotebook reports whether files hold a notebook.
func hasNotebook(files []attach.Source) bool {
	for _, f := range files {
		if isNotebook(f.Name) {
			return true
		}
	}
	return false
}

func isNotebook(name string) bool { return strings.EqualFold(path.Ext(name), ".ipynb") }

// importNotebook answers a message with a notebook attached.
func (f *Flow[S]) importNotebook(ctx context.Context, log *slog.Logger, req Request[S]) {
	name, nb, data, problem := f.readNotebook(ctx, log, req)
	if problem != "" {
		f.notify(ctx, log, req.Src, problem)
		return
	}
	ind := indication{stop: f.p.Indicate(ctx, req.Src)}
	defer ind.end("")
	c := f.enter(ctx, log, req)
	summary, ok := f.runNotebook(ctx, log, c, &nb, data)
	c.done()
	ind.stopIt()
	if ctx.Err() != nil {
		return
	}
	out, err := ipynb.Write(nb.Cells)
	if err != nil {
		log.Error("writing an executed notebook", "err", err)
		return
	}
	reaction := formatting.Reply{OK: ok}.Reaction(f.cfg.Platform)
	file := executor.File{Path: name, Size: int64(len(out)), MIME: "application/x-ipynb+json", Content: out}
	if _, err := f.p.Send(ctx, req.Src, Record[S]{}, Reply{Text: summary, Files: []executor.File{file}, Reaction: reaction}); err != nil {
		log.Error("sending an executed notebook", "err", err)
		return
	}
	ind.end(reaction)
	f.cfg.Replied()
	log.Info("notebook imported", "session", req.Session, "ok", ok)
}

// readNotebook downloads the message's files and reads its notebook; the
// other files go into the run. problem, when set, says why it cannot run.
func (f *Flow[S]) readNotebook(ctx context.Context, log *slog.Logger, req Request[S]) (name string, nb ipynb.Notebook, data []executor.File, problem string) {
	in, skipped := f.fetch(ctx, log, req.Files)
	var raw []byte
	for _, file := range in {
		if isNotebook(file.Path) && name == "" {
			name, raw = file.Path, file.Content
			continue
		}
		data = append(data, file)
	}
	if name == "" {
		return "", nb, nil, "The notebook could not be read. " + formatting.FilesNote(f.cfg.Platform, skipped, nil)
	}
	nb, err := ipynb.Parse(raw)
	if err != nil {
		return "", nb, nil, "`" + formatting.FileName(name) + "` is " + err.Error() + "."
	}
	if len(nb.Code()) == 0 {
		return "", nb, nil, "`" + formatting.FileName(name) + "` has no code cells to run."
	}
	return name, nb, data, ""
}

// runNotebook runs nb's code cells as cells of c's session, recording
// each one's number and result in nb, and returns the reply's text and
// whether all of them ran to success.
func (f *Flow[S]) runNotebook(ctx context.Context, log *slog.Logger, c *cellRun[S], nb *ipynb.Notebook, data []executor.File) (string, bool) {
	var b strings.Builder
	ran, ok, cut := 0, true, false
	limit := f.cfg.Platform.MaxText()
	for k := range nb.Cells {
		nc := &nb.Cells[k]
		if nc.Kind != ipynb.Code || !ok || ctx.Err() != nil {
			continue
		}
		i := f.nb.len(c.th)
		if ran == MaxImportCells || i >= f.nb.maxCells {
			break
		}
		ex := formatting.Extraction{Found: true, Code: nc.Source}
		out := f.runCell(ctx, log, nil, c.th, i, cell[S]{src: c.req.Src, user: c.req.User, ex: ex, files: data}, nil, "")
		data, ran = nil, ran+1
		text := out.Text
		if res := f.nb.at(c.th, i).res; res != nil {
			nc.Count, nc.Result = i+1, res
			opts := formatting.RenderOptions{Header: CellHeader(i+1, res.Session), Cell: i + 1, MaxLines: importLines, MaxChars: 300}
			text = formatting.RenderRun(f.cfg.Platform, ex, *res, opts).Text
		}
		ok = out.Reaction == formatting.Reply{OK: true}.Reaction(f.cfg.Platform)
		switch {
		case cut:
		case limit > 0 && b.Len()+len(text)+200 > limit: // bytes: never fewer than UTF-16 units
			b.WriteString("\n… the other cells' results are in the notebook")
			cut = true
		default:
			b.WriteString("\n" + text)
		}
	}
	head := "Ran " + plural(ran, "cell") + " of " + plural(len(nb.Code()), "code cell")
	if !ok {
		head += ", stopping at the first that failed"
	}
	return head + "; the executed notebook is attached." + b.String(), ok
}
