package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/joho/godotenv"
)

// update rewrites the generated documents from the settings table.
var update = flag.Bool("update", false, "rewrite .env.example and README.md's settings table from Sections")

const (
	envExamplePath = "../../.env.example"
	readmePath     = "../../README.md"
	readmeBegin    = "<!-- settings:begin (generated from internal/config/settings.go: go test ./internal/config -run TestReadme -update) -->\n"
	readmeEnd      = "<!-- settings:end -->\n"
)

const envExampleHeader = `# runblock settings, generated from internal/config/settings.go (edit there,
# then: go test ./internal/config -run TestEnvExample -update).
# Copy to .env (a real environment variable wins over .env) and uncomment what
# you set: every setting below is commented out at its default, so that a copy
# passed to ` + "`docker run --env-file`" + ` or compose keeps the image's own settings
# (an empty value would override them). A bad value stops start-up with one
# line naming the variable and the fix.
`

// usedBy names the commands that use s.
func usedBy(sec *Section, s *Setting) string {
	if names := commandsOf(sec, s); names != nil {
		return strings.Join(names, ", ")
	}
	return "all"
}

// meaning is a setting's doc and the values it takes.
func meaning(s *Setting) string {
	if v := s.Kind.values(s); v != "" {
		return s.Doc + " Takes " + v + "."
	}
	return s.Doc
}

// envExample is .env.example as the table makes it.
func envExample() []byte {
	var b bytes.Buffer
	b.WriteString(envExampleHeader)
	for i := range Sections {
		sec := &Sections[i]
		title := "--- " + sec.Title
		if sec.About != "" {
			title += ": " + sec.About
		}
		if names := commandsOf(sec, &Setting{}); names != nil {
			title += " (" + strings.Join(names, ", ") + ")"
		}
		fmt.Fprintf(&b, "\n# %s %s\n", title, strings.Repeat("-", max(3, 76-len(title))))
		for j := range sec.Settings {
			s := &sec.Settings[j]
			doc := meaning(s)
			if s.DefaultDoc != "" {
				doc += " Default: " + s.DefaultDoc + "."
			}
			if s.UsedBy != nil {
				doc += " Used by " + usedBy(sec, s) + " only."
			}
			for _, line := range wrap(doc, 78) {
				b.WriteString("# " + line + "\n")
			}
			fmt.Fprintf(&b, "#%s=%s\n", s.Name, s.Default)
		}
	}
	return b.Bytes()
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// readmeTable is README.md's settings table as the table makes it.
func readmeTable() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| Variable | Default | Used by | Meaning |\n|---|---|---|---|\n")
	for i := range Sections {
		sec := &Sections[i]
		title := "**" + sec.Title + "**"
		if sec.About != "" {
			title += ": " + sec.About
		}
		fmt.Fprintf(&b, "| %s | | | |\n", cell(title))
		for j := range sec.Settings {
			s := &sec.Settings[j]
			def := s.DefaultDoc
			if s.Default != "" {
				def = "`" + s.Default + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Name, cell(def), usedBy(sec, s), cell(meaning(s)))
		}
	}
	return b.String()
}

// TestEnvExample checks .env.example is what the settings table makes.
func TestEnvExample(t *testing.T) {
	want := envExample()
	if *update {
		if err := os.WriteFile(envExamplePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(envExamplePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf(".env.example differs from the settings table; run go test ./internal/config -run TestEnvExample -update\n%s", firstDifference(string(got), string(want)))
	}
}

// TestEnvExampleIsTheDefaults: .env.example sets nothing (a copy used as
// Docker's --env-file keeps the image's settings), and uncommented it reads
// as the defaults.
func TestEnvExampleIsTheDefaults(t *testing.T) {
	b := envExample()
	active, err := godotenv.UnmarshalBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 0 {
		t.Errorf(".env.example sets %v; leave every setting commented out", active)
	}
	var uncommented []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "#"); ok && strings.Contains(rest, "=") && !strings.HasPrefix(rest, " ") {
			uncommented = append(uncommented, rest)
		}
	}
	example, err := godotenv.Unmarshal(strings.Join(uncommented, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range Sections {
		for _, s := range Sections[i].Settings {
			if _, ok := example[s.Name]; !ok {
				t.Errorf(".env.example lacks %s", s.Name)
			}
		}
	}
	if len(example) != len(settingNames()) {
		t.Errorf(".env.example has %d settings, the table %d", len(example), len(settingNames()))
	}
	fromExample, err := Parse(Env(example), All)
	if err != nil {
		t.Fatalf(".env.example does not parse: %v", err)
	}
	defaults, err := Parse(Env{}, All)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromExample, defaults) {
		t.Errorf(".env.example values differ from the defaults:\nexample:  %+v\ndefaults: %+v", fromExample, defaults)
	}
}

// TestReadmeSettings checks README.md's settings table, between its
// markers, is what the settings table makes.
func TestReadmeSettings(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	before, rest, ok := strings.Cut(readme, readmeBegin)
	if !ok {
		t.Fatalf("README.md lacks the line %q", readmeBegin)
	}
	got, after, ok := strings.Cut(rest, readmeEnd)
	if !ok {
		t.Fatalf("README.md lacks the line %q after the table", readmeEnd)
	}
	want := readmeTable()
	if *update && got != want {
		if err := os.WriteFile(readmePath, []byte(before+readmeBegin+want+readmeEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		got = want
	}
	if got != want {
		t.Errorf("README.md's settings table differs from the settings table; run go test ./internal/config -run TestReadme -update\n%s", firstDifference(got, want))
	}
	for _, name := range settingNames() {
		if n := strings.Count(got, "\n| `"+name+"` |"); n != 1 {
			t.Errorf("the README's table has %d rows for %s, want one", n, name)
		}
	}
}

func settingNames() []string {
	var names []string
	for i := range Sections {
		for _, s := range Sections[i].Settings {
			names = append(names, s.Name)
		}
	}
	return names
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return ""
}
