package sandbox

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// TestHumanEval runs the 164 HumanEval programs with their canonical
// solutions (all must pass) and with the body replaced by `pass` (all must
// fail with an exception's error line), two at a time.
func TestHumanEval(t *testing.T) {
	if testing.Short() {
		t.Skip("HumanEval runs 328 snippets; skipped with -short")
	}
	programs := humanEvalProblems(t)
	e, err := New(context.Background(), Config{Pool: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	exception := regexp.MustCompile(`^[A-Za-z_.]*(Error|Exception)\b`)
	type job struct {
		name, code string
		pass       bool
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	assertions := 0
	for range 2 {
		wg.Go(func() {
			for j := range jobs {
				res, err := e.Run(context.Background(), executor.Request{Code: j.code, Timeout: 20 * time.Second})
				switch {
				case err != nil:
					t.Errorf("%s: %v", j.name, err)
				case j.pass && !res.Success:
					t.Errorf("%s: canonical solution failed: %s\n%s", j.name, res.Error, res.Stderr)
				case !j.pass && (res.Success || !exception.MatchString(res.Error)):
					t.Errorf("%s: `pass` body: success=%v error=%q", j.name, res.Success, res.Error)
				case !j.pass && strings.HasPrefix(res.Error, "AssertionError"):
					mu.Lock()
					assertions++
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range programs {
		jobs <- job{name: p.name, code: p.program(p.solution), pass: true}
		jobs <- job{name: p.name, code: p.program("    pass\n")}
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d programs; with `pass` bodies %d fail with AssertionError, the rest with another exception", len(programs), assertions)
}
