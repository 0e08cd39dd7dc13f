package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, COPY, RUN, ...
	args string
}

// parseDockerfile splits a Dockerfile into instructions: comments and blank
// lines dropped, backslash continuations joined (comment lines inside a
// continuation skipped, as Docker does).
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []instruction
		cur     strings.Builder
		start   int
		lineNum int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNum++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = lineNum
		}
		cont := strings.HasSuffix(line, `\`)
		cur.WriteString(strings.TrimSuffix(line, `\`))
		cur.WriteByte(' ')
		if cont {
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.Len() > 0 {
		t.Fatalf("Dockerfile ends inside a continuation started on line %d", start)
	}
	return out
}

// splitFlags separates leading --flag=value words from the rest.
func splitFlags(args string) (flags map[string]string, rest []string) {
	flags = map[string]string{}
	words := strings.Fields(args)
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
		flags[k] = v
		words = words[1:]
	}
	return flags, words
}

func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	// The toolchain line, when there is one, names the Go releases are
	// built with; the go line is the least that builds the module.
	if m := regexp.MustCompile(`(?m)^toolchain go(\S+)$`).FindSubmatch(b); m != nil {
		return string(m[1])
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// dockerfile is a Dockerfile's stages: the instructions after each FROM,
// the FROM first.
type dockerfile struct {
	stages [][]instruction
	names  []string // each stage's AS name, "" for none
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	var d dockerfile
	for _, in := range parseDockerfile(t, "../Dockerfile") {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			name := ""
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				name = f[2]
			}
			d.names = append(d.names, name)
			d.stages = append(d.stages, []instruction{in})
			continue
		}
		if len(d.stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		d.stages[len(d.stages)-1] = append(d.stages[len(d.stages)-1], in)
	}
	return d
}

// stage is the index of the stage named name, or -1.
func (d dockerfile) stage(name string) int { return slices.Index(d.names, name) }

// chain is what image stage i is: its instructions and those of the
// stages it is built FROM, base first.
func (d dockerfile) chain(i int) []instruction {
	var out []instruction
	for i >= 0 {
		out = append(slices.Clone(d.stages[i]), out...)
		i = d.stage(strings.Fields(d.stages[i][0].args)[0])
	}
	return out
}

func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)
	stages, stageName := d.stages, d.names
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(stages))
	}

	t.Run("builder Go version matches go.mod", func(t *testing.T) {
		image := strings.Fields(stages[0][0].args)[0]
		want := goModVersion(t)
		m := regexp.MustCompile(`^golang:(\d+\.\d+(?:\.\d+)?)`).FindStringSubmatch(image)
		if m == nil {
			t.Fatalf("builder image %q is not golang:<version>", image)
		}
		if m[1] != want {
			t.Errorf("builder image %s has Go %s, go.mod says %s", image, m[1], want)
		}
	})

	t.Run("COPY sources exist", func(t *testing.T) {
		built := map[string][]string{} // stage name -> paths written by go build -o
		for i, st := range stages {
			for _, in := range st {
				if in.cmd == "RUN" {
					for _, m := range regexp.MustCompile(`go build .*-o (\S+)`).FindAllStringSubmatch(in.args, -1) {
						built[stageName[i]] = append(built[stageName[i]], m[1])
					}
				}
			}
		}
		copies := 0
		for _, st := range stages {
			for _, in := range st {
				if in.cmd != "COPY" && in.cmd != "ADD" {
					continue
				}
				copies++
				flags, words := splitFlags(in.args)
				if strings.HasPrefix(strings.Join(words, " "), "[") {
					if err := json.Unmarshal([]byte(strings.Join(words, " ")), &words); err != nil {
						t.Fatalf("line %d: bad JSON form: %v", in.line, err)
					}
				}
				if len(words) < 2 {
					t.Fatalf("line %d: %s needs a source and a destination", in.line, in.cmd)
				}
				for _, src := range words[:len(words)-1] {
					if from, ok := flags["from"]; ok {
						if !slices.Contains(built[from], src) {
							t.Errorf("line %d: COPY --from=%s %s: stage %q builds %v", in.line, from, src, from, built[from])
						}
						continue
					}
					matches, err := filepath.Glob(filepath.Join("..", src))
					if err != nil || len(matches) == 0 {
						t.Errorf("line %d: COPY source %q does not exist in the build context", in.line, src)
					}
				}
			}
		}
		if copies == 0 {
			t.Error("no COPY at all")
		}
	})

	stageOf, chain := d.stage, d.chain
	final := chain(len(stages) - 1)
	find := func(cmd string) []instruction {
		var out []instruction
		for _, in := range final {
			if in.cmd == cmd {
				out = append(out, in)
			}
		}
		return out
	}

	t.Run("final image", func(t *testing.T) {
		if img := strings.Fields(final[0].args)[0]; strings.HasPrefix(img, "golang") {
			t.Errorf("final image %s is the Go toolchain, want a slim image", img)
		}
		python := false
		for _, in := range find("RUN") {
			python = python || regexp.MustCompile(`install .*\bpython3\b`).MatchString(in.args)
		}
		if !python {
			t.Error("final image does not install python3")
		}
		users := find("USER")
		if len(users) == 0 {
			t.Fatal("no USER: the image would run as root")
		}
		if u, _, _ := strings.Cut(users[len(users)-1].args, ":"); u == "root" || u == "0" {
			t.Errorf("USER %s is root", users[len(users)-1].args)
		}
		entry := find("ENTRYPOINT")
		if len(entry) != 1 || entry[0].args != `["runblock"]` {
			t.Errorf(`ENTRYPOINT = %v, want ["runblock"]`, entry)
		}
		if stop := find("STOPSIGNAL"); len(stop) != 1 || stop[0].args != "SIGTERM" {
			t.Errorf("STOPSIGNAL = %v, want SIGTERM, the signal that drains", stop)
		}
		hc := find("HEALTHCHECK")
		if len(hc) != 1 {
			t.Fatalf("want one HEALTHCHECK, got %d", len(hc))
		}
		// The running service's own /readyz, not a fresh process's canary
		// (doctor), which also fails on a read-only root.
		flags, words := splitFlags(hc[0].args)
		if strings.Join(words, " ") != `CMD ["runblock", "health"]` {
			t.Errorf("HEALTHCHECK %q, want CMD [\"runblock\", \"health\"]", hc[0].args)
		}
		if flags["start-period"] == "" || flags["start-interval"] == "" {
			t.Errorf("HEALTHCHECK %q has no --start-period and --start-interval: the container stays \"starting\" for a whole interval", hc[0].args)
		}
	})

	installs := func(ins []instruction, pkg string) bool {
		re := regexp.MustCompile(`apt-get install [^&]*(^|\s)` + regexp.QuoteMeta(pkg) + `(\s|$)`)
		for _, in := range ins {
			if in.cmd == "RUN" && re.MatchString(in.args) {
				return true
			}
		}
		return false
	}
	scientific := []string{"python3-numpy", "python3-pandas", "python3-matplotlib", "python3-scipy", "python3-sympy", "python3-networkx"}

	t.Run("default image ships the scientific stack and CA certificates", func(t *testing.T) {
		for _, pkg := range append([]string{"python3", "ca-certificates"}, scientific...) {
			if !installs(final, pkg) {
				t.Errorf("the default (last) stage does not install %s", pkg)
			}
		}
	})

	t.Run("slim target: runblock without the stack", func(t *testing.T) {
		i := stageOf("slim")
		if i < 0 {
			t.Fatal("no stage named slim (docker build --target slim)")
		}
		slim := chain(i)
		for _, pkg := range []string{"python3", "ca-certificates"} {
			if !installs(slim, pkg) {
				t.Errorf("slim does not install %s", pkg)
			}
		}
		for _, pkg := range scientific {
			if installs(slim, pkg) {
				t.Errorf("slim installs %s", pkg)
			}
		}
		var entry bool
		for _, in := range slim {
			entry = entry || in.cmd == "ENTRYPOINT" && in.args == `["runblock"]`
		}
		if !entry {
			t.Error(`slim has no ENTRYPOINT ["runblock"]`)
		}
	})

	t.Run("dockerignore keeps secrets out", func(t *testing.T) {
		b, err := os.ReadFile("../.dockerignore")
		if err != nil {
			t.Fatal(err)
		}
		// .env at the top, the Kubernetes token files (deploy/kubernetes/*.env).
		for _, want := range []string{".env", "**/*.env"} {
			if !slices.Contains(strings.Split(string(b), "\n"), want) {
				t.Errorf(".dockerignore does not exclude %s", want)
			}
		}
	})
}
