package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
)

// pistonRequest is the body of Piston's POST /api/v2/execute. Compile
// settings are accepted and ignored: Python has no compile stage.
type pistonRequest struct {
	Language       string       `json:"language"`
	Version        string       `json:"version"`
	Files          []pistonFile `json:"files"`
	Stdin          string       `json:"stdin"`
	Args           []string     `json:"args"`
	RunTimeout     *float64     `json:"run_timeout"`      // ms; -1 or absent: the server's limit
	RunMemoryLimit *float64     `json:"run_memory_limit"` // bytes; -1 or absent: the server's limit
}

// pistonFile is one of a Piston request's files: its content "utf8" (the
// default, also "text"), "base64" or "hex", as Encoding says.
type pistonFile struct {
	Name     string `json:"name"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

type pistonResponse struct {
	Language string    `json:"language"`
	Version  string    `json:"version"`
	Run      pistonRun `json:"run"`
}

// pistonRun is one stage's outcome: code is null when a signal ended the
// run; status is Piston's short reason (TO timeout, SG signal, RE runtime
// error, OL output limit), null on success.
type pistonRun struct {
	Stdout   string  `json:"stdout"`
	Stderr   string  `json:"stderr"`
	Output   string  `json:"output"`
	Code     *int    `json:"code"`
	Signal   *string `json:"signal"`
	Message  *string `json:"message"`
	Status   *string `json:"status"`
	WallTime int64   `json:"wall_time"`
}

type pistonRuntime struct {
	Language string   `json:"language"`
	Version  string   `json:"version"`
	Aliases  []string `json:"aliases"`
	Runtime  string   `json:"runtime,omitempty"`
}

var pythonAliases = []string{"py", "py3", "python3"}

func pistonErrors(w *answer, status int, message string) {
	writeJSON(w, status, map[string]string{"message": message})
}

func (h *Handler) runtimes(w *answer, _ *http.Request, _ string) error {
	writeJSON(w, http.StatusOK, []pistonRuntime{{Language: "python", Version: h.cfg.PythonVersion, Aliases: pythonAliases}})
	return nil
}

// servesVersion reports whether a requested Piston version selector can be
// served by our python: "*", empty, or any Python 3 version (clients pin
// the version the public Piston had; the answer names ours).
func (h *Handler) servesVersion(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || v == "*" || v == "x" || v == "3" || strings.HasPrefix(v, "3.") || strings.HasPrefix(v, "^3") || strings.HasPrefix(v, "~3")
}

func (h *Handler) piston(w *answer, r *http.Request, client string) error {
	var body pistonRequest
	if err := decode(r, &body, false); err != nil {
		return err
	}
	lang := strings.ToLower(body.Language)
	if lang == "" {
		return badRequest("language is required")
	}
	if (lang != "python" && !slices.Contains(pythonAliases, lang)) || !h.servesVersion(body.Version) {
		return badRequest("%s-%s runtime is unknown", body.Language, body.Version)
	}
	if len(body.Files) == 0 {
		return badRequest("files is required as an array with at least one file")
	}
	p := wire.Program{Launch: executor.LaunchFile, Args: body.Args, Stdin: body.Stdin, FilePath: "name"}
	for i, f := range body.Files {
		if f.Name == "" {
			f.Name = fmt.Sprintf("file%d.code", i)
		}
		p.Files = append(p.Files, wire.File{Path: f.Name, Content: f.Content, Encoding: f.Encoding})
	}
	p.Code = p.Files[0].Path
	if t := body.RunTimeout; t != nil && *t > 0 {
		p.Timeout = wire.Seconds(*t / 1000)
	}
	if m := body.RunMemoryLimit; m != nil && *m > 0 {
		p.MemoryBytes = int64(*m)
	}
	res, err := h.run(r, client, p)
	if err != nil {
		return err
	}
	run := pistonRun{Stdout: res.Stdout, Stderr: res.Stderr, Output: res.Stdout + res.Stderr, WallTime: res.DurationMS}
	status := ""
	switch {
	case res.Timeout:
		status = "TO"
	case res.Signal != "":
		status = "SG"
	case res.OutputLimit:
		status = "OL"
	case !res.Success:
		status = "RE"
	}
	if res.Timeout || res.Signal != "" {
		sig := res.Signal
		if sig == "" {
			sig = "SIGKILL"
		}
		run.Signal = &sig
	} else {
		code := res.ExitCode
		run.Code = &code
	}
	if status != "" {
		run.Status = &status
	}
	if res.Timeout {
		msg := fmt.Sprintf("timed out after %s", res.TimeoutLimit)
		run.Message = &msg
	} else if res.MemoryExceeded {
		msg := "memory limit exceeded"
		run.Message = &msg
	}
	writeJSON(w, http.StatusOK, pistonResponse{Language: "python", Version: h.cfg.PythonVersion, Run: run})
	return nil
}
