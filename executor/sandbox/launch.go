package sandbox

import (
	_ "embed"

	"github.com/runblock/runblock/executor"
)

// launcher runs a launched request (executor.Request.Launch) as python
// would: see launch.py.
//
//go:embed launch.py
var launcher string

// launchCall runs the launcher, after its definition: its value is the
// launched cell's.
const launchCall = "\n_runblock_launch()\n"

// launched is req as the guard runs it: a launched request's code is the
// launcher, its arguments the launch's mode, whether it is a cell, its
// target (Code) and its own arguments. A snippet is left as it is.
func launched(req executor.Request) executor.Request {
	if req.Launch == "" {
		return req
	}
	kind := "cell"
	if req.Script {
		kind = "script"
	}
	req.Args = append([]string{string(req.Launch), kind, req.Code}, req.Args...)
	req.Code = launcher + launchCall
	return req
}
