package api

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runblock/runblock/executor"
)

//go:embed launch.py
var launcher string

// launchCall runs the launcher, after its definition.
const launchCall = "\n_runblock_launch()\n"

// LauncherBytes is what the launcher adds to a request's code: an
// executor behind the API takes code and stdin up to the API's
// MaxCodeBytes plus this (RunnerCodeBytes).
var LauncherBytes = int64(len(launcher) + len(launchCall))

// RunnerCodeBytes is the code limit of the executor behind an API that
// takes code, stdin and files up to maxCodeBytes: a request that is more
// than a plain snippet goes to it with its launcher.
func RunnerCodeBytes(maxCodeBytes int64) int64 { return maxCodeBytes + LauncherBytes }

// maxFiles bounds the files of one request.
const maxFiles = 100

// program is what one request runs: Python code, a file or a module, with
// sys.argv and files put beside it in the work dir first.
type program struct {
	mode   string // "code", "file" or "module"
	target string // the code, the file's path or the module's name
	argv   []string
	files  []file
	stdin  string
	// timeout and memory are the requested limits (0: the server's).
	timeout time.Duration
	memory  int64
}

// file is one input file, its path relative to the work dir.
type file struct {
	Path string `json:"path"`
	Data []byte `json:"data"` // base64 in JSON
}

// limits are the server's caps on what a request may ask for.
type limits struct {
	maxTimeout time.Duration
	maxMemory  int64
	maxBytes   int64 // code + stdin + files
}

// request turns p into an executor.Request within lim. A plain snippet
// goes as it is; files, argv, a script or a module go through the
// launcher (launch.py).
func (p program) request(lim limits) (executor.Request, error) {
	n := int64(len(p.target) + len(p.stdin))
	for _, f := range p.files {
		n += int64(len(f.Data))
	}
	if n > lim.maxBytes {
		return executor.Request{}, executor.Errorf(executor.ErrTooLarge,
			"code, stdin and files are %d bytes, over the limit of %d bytes", n, lim.maxBytes)
	}
	req := executor.Request{Stdin: p.stdin, Timeout: p.timeout, MemoryBytes: p.memory}
	if req.Timeout > lim.maxTimeout {
		req.Timeout = lim.maxTimeout
	}
	if req.MemoryBytes > lim.maxMemory {
		req.MemoryBytes = lim.maxMemory
	}
	if p.mode == "code" && len(p.files) == 0 && len(p.argv) == 1 {
		req.Code = p.target
		return req, nil
	}
	// One path: the sandbox places the files and passes the arguments;
	// the launcher reads its mode, target and argv[0] from the first of
	// them.
	req.Code = launcher + launchCall
	req.Args = append([]string{p.mode, p.target}, p.argv...)
	for _, f := range p.files {
		req.Files = append(req.Files, executor.File{Path: f.Path, Size: int64(len(f.Data)), Content: f.Data})
	}
	return req, nil
}

// checkPaths applies the input-file rules (executor.CheckInputPaths) to
// the paths of a request's files, an error naming the field (field is
// "files[%d].path" or the like) answered 400.
func checkPaths(field string, paths []string) error {
	err := executor.CheckInputPaths(paths)
	var pe *executor.PathError
	if errors.As(err, &pe) {
		return badRequest("%s: %s", fmt.Sprintf(field, pe.Index), pe.Error())
	}
	return err
}

// addFiles checks a request's input files, at paths and named by field
// ("files[%d].path") in errors, and adds each with the content that data
// decodes for it.
func (p *program) addFiles(field string, paths []string, data func(i int) ([]byte, error)) error {
	if len(paths) > maxFiles {
		return badRequest("%d files, over the limit of %d", len(paths), maxFiles)
	}
	if err := checkPaths(field, paths); err != nil {
		return err
	}
	for i, path := range paths {
		b, err := data(i)
		if err != nil {
			return badRequest("files[%d].content: %v", i, err)
		}
		p.files = append(p.files, file{Path: path, Data: b})
	}
	return nil
}

// pythonArgs parses a python command line (without the executable) into a
// program: -c CODE, -m MODULE or FILE, then the script's arguments. Options
// that change nothing here (-u, -B, -E, -s, -S, -I, -q, -O, -W x, -X x) are
// accepted and ignored.
func pythonArgs(args []string) (program, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "-m":
			if i+1 >= len(args) {
				return program{}, fmt.Errorf("python option %s needs an argument", a)
			}
			if a == "-c" {
				return program{mode: "code", target: args[i+1], argv: append([]string{"-c"}, args[i+2:]...)}, nil
			}
			return program{mode: "module", target: args[i+1], argv: append([]string{args[i+1]}, args[i+2:]...)}, nil
		case a == "-W" || a == "-X":
			i++
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			return program{mode: "code", target: a[2:], argv: append([]string{"-c"}, args[i+1:]...)}, nil
		case strings.HasPrefix(a, "-m") && len(a) > 2:
			return program{mode: "module", target: a[2:], argv: append([]string{a[2:]}, args[i+1:]...)}, nil
		case strings.HasPrefix(a, "-W") || strings.HasPrefix(a, "-X"):
		case a == "-" || a == "--":
			return program{}, fmt.Errorf("python reading its program from stdin is not supported: use -c CODE or a file")
		case strings.HasPrefix(a, "-"):
			if strings.Trim(a[1:], "uBEsSIqOb") != "" {
				return program{}, fmt.Errorf("python option %s is not supported", a)
			}
		default:
			return program{mode: "file", target: a, argv: args[i:]}, nil
		}
	}
	return program{}, fmt.Errorf("args name no program: give [\"-c\", CODE], [\"-m\", MODULE, ...] or a file name")
}
