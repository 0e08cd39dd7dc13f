package api

import (
	"net/http"
	"path"
	"regexp"

	"golang.org/x/sys/unix"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
)

// snekboxRequest is the body of snekbox's POST /eval.
type snekboxRequest struct {
	Input *string  `json:"input"`
	Args  []string `json:"args"`
	// Files' content is base64, as snekbox takes it, unless a file's
	// "encoding" says "text".
	Files []wire.File `json:"files"`
	// ExecutablePath is in snekbox's layout, such as
	// /snekbin/python/3.12/bin/python: any python is served by ours.
	ExecutablePath string `json:"executable_path"`
}

// snekboxResponse is snekbox's answer: stderr is merged into stdout, as
// snekbox's own runs do.
type snekboxResponse struct {
	Stdout     string        `json:"stdout"`
	Returncode int           `json:"returncode"`
	Files      []snekboxFile `json:"files"`
}

type snekboxFile struct {
	Path    string `json:"path"`
	Size    int    `json:"size"`
	Content []byte `json:"content"` // base64, as encoding/json writes bytes
}

// snekboxErrors answers as snekbox's web framework (falcon) does.
func snekboxErrors(w *answer, status int, message string) {
	writeJSON(w, status, map[string]string{"title": http.StatusText(status), "description": message})
}

var pythonExecutable = regexp.MustCompile(`^python(3(\.[0-9]+)?)?$`)

func (h *Handler) snekbox(w *answer, r *http.Request, client string) error {
	var body snekboxRequest
	if err := decode(r, &body, false); err != nil {
		return err
	}
	if body.ExecutablePath != "" && !pythonExecutable.MatchString(path.Base(body.ExecutablePath)) {
		return badRequest("executable_path %q is not a python this server runs", body.ExecutablePath)
	}
	args := body.Args
	if body.Input != nil {
		if args == nil {
			args = []string{"-c"}
		}
		args = append(args[:len(args):len(args)], *body.Input)
	}
	if args == nil {
		return badRequest("give \"input\" or \"args\"")
	}
	p, err := pythonArgs(args)
	if err != nil {
		return badRequest("args: %v", err)
	}
	for _, f := range body.Files {
		if f.Encoding == "" {
			f.Encoding = "base64"
		}
		p.Files = append(p.Files, f)
	}
	res, err := h.run(r, client, p)
	if err != nil {
		return err
	}
	out := snekboxResponse{Stdout: res.Stdout + res.Stderr, Returncode: shellStatus(res), Files: []snekboxFile{}}
	for _, f := range res.Files {
		out.Files = append(out.Files, snekboxFile{Path: f.Path, Size: len(f.Content), Content: f.Content})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// shellStatus is the run's exit status as a shell reports it: 128 + the
// signal for a killed run, so a timeout or the memory limit reads 137
// (SIGKILL), as snekbox's clients expect (its limits kill).
func shellStatus(res executor.Result) int {
	if res.Timeout || res.MemoryExceeded {
		return 128 + int(unix.SIGKILL)
	}
	if res.Signal != "" {
		if sig := unix.SignalNum(res.Signal); sig != 0 {
			return 128 + int(sig)
		}
		return 128 + int(unix.SIGKILL)
	}
	return res.ExitCode
}
