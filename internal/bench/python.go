package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// interpreter is the real python binary behind a name such as a pyenv shim.
type interpreter struct {
	Path    string
	Version string
}

// resolvePython asks name for its sys.executable, so bare runs start the
// interpreter itself and not a shell shim in front of it.
func resolvePython(ctx context.Context, name string) (interpreter, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, "-c", "import sys; print(sys.executable); print(sys.version.split()[0])")
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return interpreter{}, fmt.Errorf("resolve python %q: %w", name, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] == "" {
		return interpreter{}, fmt.Errorf("resolve python %q: unexpected answer %q", name, out)
	}
	return interpreter{Path: lines[0], Version: lines[1]}, nil
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// bare runs programs with `python -I -S -c`, the floor any executor pays.
type bare struct {
	python string
	dir    string
}

// run runs code and returns its exit status and the start of its stdout.
func (b bare) run(ctx context.Context, code string, timeout time.Duration) (bool, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.python, "-I", "-S", "-c", code)
	cmd.Dir = b.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.WaitDelay = time.Second
	out := &limitedBuffer{max: 4096}
	cmd.Stdout = out
	cmd.Stderr = &limitedBuffer{max: 4096}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, out.buf.String(), nil
	case errors.As(err, &exit):
		return false, out.buf.String(), nil
	default:
		return false, "", fmt.Errorf("bare python: %w", err)
	}
}

// findShared returns the ../shared folder beside the module root, looked up
// from the working directory upwards, or "" when there is none.
func findShared() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(dir, "..", "shared")
			if st, err := os.Stat(shared); err == nil && st.IsDir() {
				return filepath.Clean(shared)
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// HumanEval.jsonl.gz is OpenAI's HumanEval (MIT, testdata/HumanEval.LICENSE),
// shipped so that `runblock bench` reproduces its figures from a clone.
//
//go:embed testdata/HumanEval.jsonl.gz
var humanEvalData []byte

// humanEval returns the HumanEval programs of a gzipped JSON-lines stream,
// each a prompt, its canonical solution and its check() call.
func humanEval(r io.Reader) ([]string, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	var progs []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var p struct {
			Prompt            string `json:"prompt"`
			CanonicalSolution string `json:"canonical_solution"`
			Test              string `json:"test"`
			EntryPoint        string `json:"entry_point"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("problem %d: %w", len(progs)+1, err)
		}
		progs = append(progs, p.Prompt+p.CanonicalSolution+"\n"+p.Test+"\n"+"check("+p.EntryPoint+")\n")
	}
	return progs, sc.Err()
}

var seedHumanEvalKey = regexp.MustCompile(`^humaneval_c(\d+)_s$`)

// runSeed runs the original's seed_bench.py --json and reads its figures.
func runSeed(ctx context.Context, python, script string, programs int) (*Original, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script, "--json")
	cmd.Dir = filepath.Dir(script)
	cmd.WaitDelay = time.Second
	stderr := &limitedBuffer{max: 8192}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w: %s", script, err, strings.TrimSpace(stderr.buf.String()))
	}
	return parseSeed(out, programs)
}

// parseSeed reads the last line of seed_bench.py --json.
func parseSeed(out []byte, programs int) (*Original, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	raw := map[string]float64{}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &raw); err != nil {
		return nil, fmt.Errorf("read seed_bench.py output %q: %w", out, err)
	}
	o := &Original{HelloP50MS: raw["hello_p50_ms"], HelloP90MS: raw["hello_p90_ms"], Raw: []map[string]float64{raw}}
	for k, v := range raw {
		m := seedHumanEvalKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		c, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		s := Stats{Concurrency: c, Runs: programs, Passed: int(raw["humaneval_c"+m[1]+"_passed"]), WallS: v}
		if v > 0 {
			s.RunsPerS = float64(programs) / v
		}
		o.HumanEval = append(o.HumanEval, s)
	}
	if o.HelloP50MS <= 0 {
		return nil, fmt.Errorf("read seed_bench.py output %q: no hello_p50_ms", out)
	}
	slices.SortFunc(o.HumanEval, func(a, b Stats) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	return o, nil
}

// hasModules is nil when python imports every module, else an error naming
// what it lacks (the import's own last line).
func hasModules(ctx context.Context, python string, modules ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import "+strings.Join(modules, ", "))
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return errors.New(last)
	}
	return err
}
