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

// BenchmarkHellosInARow runs print('hello') one after another through
// Run, pre-forked with a pool of two (the default on two CPUs): each run
// takes a sandbox as the last one ends, so the pool's starts, not the
// runs, set the pace. lag1 is the correlation of each run's time with
// the next one's: near -1 when runs in a row alternate between a short
// and a long wait.
func BenchmarkHellosInARow(b *testing.B) {
	e := benchExecutor(b, tiers[0], 2, true)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		res, err := e.Run(context.Background(), executor.Request{Code: "print('hello')"})
		if err != nil || res.Stdout != "hello\n" {
			b.Fatalf("%+v %v", res, err)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(lagOneCorrelation(lat), "lag1")
	reportLatency(b, lat)
}

// lagOneCorrelation is the correlation of d[i] with d[i+1].
func lagOneCorrelation(d []time.Duration) float64 {
	if len(d) < 3 {
		return 0
	}
	var mean float64
	for _, x := range d {
		mean += float64(x)
	}
	mean /= float64(len(d))
	var num, den float64
	for i, x := range d {
		dev := float64(x) - mean
		den += dev * dev
		if i+1 < len(d) {
			num += dev * (float64(d[i+1]) - mean)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

func TestLagOneCorrelation(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	for _, c := range []struct {
		name     string
		d        []time.Duration
		min, max float64
	}{
		{"alternating", ms(1, 4, 1, 4, 1, 4, 1, 4, 1, 4), -1, -0.85},
		{"in runs", ms(1, 1, 1, 1, 1, 4, 4, 4, 4, 4), 0.55, 1},
		{"all alike", ms(3, 3, 3, 3), 0, 0},
		{"too few", ms(1, 4), 0, 0},
	} {
		if got := lagOneCorrelation(c.d); got < c.min || got > c.max {
			t.Errorf("%s: %.2f, want %.2f to %.2f", c.name, got, c.min, c.max)
		}
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
