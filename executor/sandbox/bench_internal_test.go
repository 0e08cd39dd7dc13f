package sandbox

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/procstat"
)

// benchExecutors builds executors for one tier each, side by side.
func benchExecutor(b testing.TB, layers layerSet, poolSize int, fork bool) *Executor {
	b.Helper()
	py, err := findPython(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Pool: poolSize}.withDefaults()
	pl, err := newPlan(py, layers)
	if err != nil {
		b.Fatal(err)
	}
	e := &Executor{cfg: cfg, log: cfg.Logger, plan: pl}
	if !layers.Namespaces {
		e.plan.hostUID = -1
	}
	if fork {
		if e.fork, err = startForkServer(context.Background(), pl, nil, cfg.Logger); err != nil {
			b.Fatal(err)
		}
	}
	if poolSize > 0 {
		e.pool = newPool(e, poolSize)
	}
	b.Cleanup(e.Close)
	return e
}

var benchTiers = []struct {
	name   string
	layers layerSet
	pool   int
	fork   bool
}{
	{"guard-only", layerSet{}, 0, false},
	{"full-cold", tiers[0], 0, false},
	{"full-pool", tiers[0], 1, false},
	{"full-fork", tiers[0], 0, true},
	{"full-prefork", tiers[0], 1, true},
}

// BenchmarkHello compares print('hello') latency: bare python -I -S -c,
// the guard alone, full isolation cold, from the pool, forked from the fork
// server, and pre-forked.
// Sub-benchmarks report p50/p90 in ms beside ns/op.
func BenchmarkHello(b *testing.B) {
	py, err := findPython(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bare", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if out, err := exec.Command(py.Executable, "-I", "-S", "-c", "print('hello')").Output(); err != nil || string(out) != "hello\n" {
				b.Fatalf("%q %v", out, err)
			}
			lat = append(lat, time.Since(start))
		}
		reportLatency(b, lat)
	})
	for _, tier := range benchTiers {
		b.Run(tier.name, func(b *testing.B) {
			e := benchExecutor(b, tier.layers, tier.pool, tier.fork)
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				var sb *proc
				if tier.pool > 0 {
					sb = <-e.pool.idle // a chat message arriving while the pool is warm
				}
				start := time.Now()
				var res executor.Result
				var err error
				if sb != nil {
					res, err = sb.run(context.Background(), executor.Request{Code: "print('hello')"})
				} else {
					res, err = e.Run(context.Background(), executor.Request{Code: "print('hello')"})
				}
				if err != nil || res.Stdout != "hello\n" {
					b.Fatalf("%+v %v", res, err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.9), "p90-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

type humanEvalProblem struct {
	name, prompt, solution, test, entryPoint string
}

func (p humanEvalProblem) program(solution string) string {
	return p.prompt + solution + "\n" + p.test + "\ncheck(" + p.entryPoint + ")\n"
}

// humanEvalProblems reads ../shared/data/HumanEval.jsonl.gz, relative to the
// repository root (tests run in the package dir).
func humanEvalProblems(tb testing.TB) []humanEvalProblem {
	tb.Helper()
	// The copy the benchmark ships (internal/bench/testdata, MIT).
	f, err := os.Open(filepath.Join("..", "..", "internal", "bench", "testdata", "HumanEval.jsonl.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var problems []humanEvalProblem
	dec := json.NewDecoder(zr)
	for dec.More() {
		var raw map[string]string
		if err := dec.Decode(&raw); err != nil {
			tb.Fatal(err)
		}
		problems = append(problems, humanEvalProblem{name: raw["task_id"], prompt: raw["prompt"],
			solution: raw["canonical_solution"], test: raw["test"], entryPoint: raw["entry_point"]})
	}
	return problems
}

// BenchmarkHumanEval runs the 164 programs at concurrency 1 and 2, and
// reports the CPU time the whole machine spent a program (every process
// of the runs, the kernel's workers, the bench's own): with every CPU
// busy, the ratio of two builds' CPU a program is that of their speeds,
// and it drifts less than their wall times.
func BenchmarkHumanEval(b *testing.B) {
	problems := humanEvalProblems(b)
	for _, tier := range benchTiers[1:] {
		for _, conc := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/c%d", tier.name, conc), func(b *testing.B) {
				e := benchExecutor(b, tier.layers, tier.pool, tier.fork)
				before := machineCPU(b)
				for b.Loop() {
					jobs := make(chan string)
					var wg sync.WaitGroup
					for range conc {
						wg.Go(func() {
							for code := range jobs {
								res, err := e.Run(context.Background(), executor.Request{Code: code, Timeout: 10 * time.Second})
								if err != nil || !res.Success {
									b.Errorf("%v %s", err, res.Error)
								}
							}
						})
					}
					for _, p := range problems {
						jobs <- p.program(p.solution)
					}
					close(jobs)
					wg.Wait()
				}
				busy := machineCPU(b).Busy - before.Busy
				b.ReportMetric(float64(busy)*1000/procstat.ClockTicks/float64(b.N*len(problems)), "machine-cpu-ms/program")
			})
		}
	}
}

// machineCPU is what the machine's CPUs did so far, as the bench's
// HumanEval rows read it.
func machineCPU(tb testing.TB) procstat.CPUTimes {
	tb.Helper()
	t, ok := procstat.ReadCPUTimes("/proc/stat")
	if !ok {
		tb.Skip("no /proc/stat to read the machine's CPU times from")
	}
	return t
}
