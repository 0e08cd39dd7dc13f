package formatting

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// extractRules are messages as people and LLMs write them (LLM answers,
// python-discord and piston-bot style requests), one or more per rule of
// issue 13. Each checks the code that runs and the languages hinted, and its
// full extraction is kept as a golden file under testdata/extract/rules.
var extractRules = []struct {
	name   string
	p      Platform
	text   string
	code   string // what runs, "" for nothing
	others []string
}{
	// 1. The info string's first word is the language.
	{"info_title", Discord, "Here is a Fibonacci function:\n\n```python title=\"fib.py\"\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\nprint(fib(10))\n```\n\nThis prints `55`.",
		"def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\nprint(fib(10))", nil},
	{"info_path", Slack, "Update the module:\n```python:src/app.py\nimport sys\nprint(sys.argv[0] != '')\n```", "import sys\nprint(sys.argv[0] != '')", nil},
	{"info_braces", Discord, "```py {linenos=true}\nprint(\"hi\")\n```", "print(\"hi\")", nil},
	{"info_word", Slack, "```python showLineNumbers\nx = 2\nprint(x ** 10)\n```", "x = 2\nprint(x ** 10)", nil},
	{"info_many_attributes", Discord, "```python title=\"my file.py\" hl_lines=\"1 3\" linenums='1'\nprint('attrs')\n```", "print('attrs')", nil},
	{"info_version_word", Discord, "```Python 3\nprint('three')\n```", "print('three')", nil},
	{"info_code_on_fence_line", Slack, "```py print(1)\nprint(2)\n```", "print(1)\nprint(2)", nil},
	{"info_statement_on_fence_line", Slack, "```python import os\nprint(os.sep)\n```", "import os\nprint(os.sep)", nil},
	{"info_other_language", Discord, "```js title=\"app.js\"\nconsole.log(1)\n```", "", []string{"js"}},
	{"info_not_annotation", Discord, "```\nc: int = 1\nprint(c)\n```", "c: int = 1\nprint(c)", nil},
	{"info_not_expression", Slack, "```r = 0.5\nprint(r)\n```", "r = 0.5\nprint(r)", nil},
	// 2. No fence opens inside inline code.
	{"inline_fence_double", Discord, "wrap code in `` ``` `` fences. For example:\n\n```python\nprint(1)\n```", "print(1)", nil},
	{"inline_fence_single", Slack, "Start a block with `` ```python `` and close it with `` ``` ``:\n```python\nprint(2)\n```", "print(2)", nil},
	{"inline_span_then_fence", Discord, "Call `main()` like this:\n```py\ndef main():\n    print('ok')\nmain()\n```", "def main():\n    print('ok')\nmain()", nil},
	{"stray_backtick_before_fence", Discord, "don't forget the ` key\n```py\nprint(3)\n```", "print(3)", nil},
	// 3. Discord's hidden language line.
	{"discord_python_version", Discord, "```python3.12\nimport sys\nprint(sys.version_info >= (3, 8))\n```", "import sys\nprint(sys.version_info >= (3, 8))", nil},
	{"discord_typo_pyhton", Discord, "!run\n```pyhton\nprint('typo')\n```", "print('typo')", nil},
	{"discord_typo_pyton", Discord, "```pyton\nprint('typo')\n```", "print('typo')", nil},
	{"discord_capitalised", Discord, "```Python\nprint('cap')\n```", "print('cap')", nil},
	{"discord_odd_tag", Discord, "```kt\nfun main() = println(1)\n```", "", []string{"kt"}},
	{"discord_unknown_tag", Discord, "```brainfuck\n++++[>++<-]>.\n```", "", []string{"brainfuck"}},
	{"slack_single_word_runs", Slack, "```pass\nprint(1)\n```", "pass\nprint(1)", nil},
	// 4. Output blocks in LLM answers.
	{"llm_output_label", Discord, "You can reverse a list with slicing:\n\n```\nnums = [1, 2, 3]\nprint(nums[::-1])\n```\n\nOutput:\n```\n[3, 2, 1]\n```", "nums = [1, 2, 3]\nprint(nums[::-1])", nil},
	{"llm_expected_output", Slack, "```\nfor i in range(3):\n    print(i * i)\n```\n*Expected output:*\n```\n0\n1\n4\n```", "for i in range(3):\n    print(i * i)", nil},
	{"llm_you_should_see", Discord, "Run this:\n```\nprint('hello world')\n```\nYou should see:\n```\nhello world\n```", "print('hello world')", nil},
	{"llm_result_label", Discord, "```\nprint(sum(range(10)))\n```\nResult:\n```\n45\n```", "print(sum(range(10)))", nil},
	{"llm_which_prints", Discord, "```\nprint(2 ** 8)\n```\nwhich prints:\n```\n256\n```", "print(2 ** 8)", nil},
	{"llm_label_same_line", Slack, "```print(7 * 6)```\nOutput: ```42```", "print(7 * 6)", nil},
	{"llm_only_output", Discord, "The output is:\n```\n[3, 2, 1]\n```", "", nil},
	{"not_a_label", Discord, "Here's how to print a list:\n```\nprint([1, 2])\n```", "print([1, 2])", nil},
	// 5. REPL transcripts.
	{"repl_pycon", Discord, "```pycon\n>>> 1 + 1\n2\n>>> print('hi')\nhi\n```", "", nil},
	{"repl_untagged", Slack, "```\n&gt;&gt;&gt; xs = [3, 1, 2]\n&gt;&gt;&gt; sorted(xs)\n[1, 2, 3]\n```", "", nil},
	// 6. Smaller.
	{"tilde_in_list", Console, "1. Save this:\n   ~~~python\n   print('from a list')\n   ~~~\n2. Run it.", "print('from a list')", nil},
	{"tilde_indented_closer", Console, "  ~~~\n  x = 1\n  print(x)\n  ~~~\ntext after", "x = 1\nprint(x)", nil},
	{"prefix_language_js", Discord, " js\n```\nconsole.log([1, 2].map(x => x * 2))\n```", "", []string{"js"}},
	{"prefix_language_trigger", Slack, "<@U0BOT> rust\n```\nfn main() {}\n```", "", []string{"rust"}},
	{"prefix_language_python", Discord, " py\n```\nprint('prefix')\n```", "print('prefix')", nil},
	// 7. Issue 23: on Discord a language is a word followed by a line break
	// (its client's code block rule: ^```(?:([a-z0-9_+\-.#]+?)\n)?…), so a
	// block on one line, or a word and code on the fence line, has no
	// language: its content is the code, as Discord shows it.
	{"discord_one_line_tag_word", Discord, "```py print(\"hi\")```", "py print(\"hi\")", nil},
	{"discord_one_line_text_around", Discord, "can someone run ```python print(\"hi\")``` for me?", "python print(\"hi\")", nil},
	{"discord_one_line_language_word", Discord, "```r```", "r", nil},
	{"discord_one_line_other_language", Discord, "```js console.log(1)```", "js console.log(1)", nil},
	{"discord_one_line_closed_below", Discord, "```py print(1)\n```", "py print(1)", nil},
	{"discord_code_on_fence_line", Discord, "```py print(1)\nprint(2)\n```", "py print(1)\nprint(2)", nil},
}

func TestExtractRules(t *testing.T) {
	for _, tt := range extractRules {
		t.Run(tt.name, func(t *testing.T) {
			opts := ExtractOptions{Platform: tt.p, Triggered: true}
			got := Extract(tt.text, opts)
			golden(t, filepath.Join("extract", "rules", tt.name+"."+tt.p.String()+".golden"), describe(tt.text, got))
			if got.Transcript != nil {
				return // the code runs the statements: TestExtractTranscript
			}
			if got.Code != tt.code {
				t.Errorf("code\n%q\nwant\n%q", got.Code, tt.code)
			}
			if !reflect.DeepEqual(got.OtherLanguages, tt.others) {
				t.Errorf("other languages %q, want %q", got.OtherLanguages, tt.others)
			}
		})
	}
}

func TestInlineSpanTag(t *testing.T) {
	opts := ExtractOptions{Platform: Discord, Triggered: true}
	if got := Extract("`py\nx = 4\nprint(x)`", opts); got.Code != "x = 4\nprint(x)" {
		t.Errorf("py span: %#v", got)
	}
	if got := Extract("`js\nconsole.log(1)`", opts); got.Found || !reflect.DeepEqual(got.OtherLanguages, []string{"js"}) {
		t.Errorf("js span: %#v", got)
	}
	raw := ExtractOptions{Platform: Slack, Triggered: true, Raw: true}
	if got := Extract("`py\nprint(5)`", raw); got.Code != "print(5)" {
		t.Errorf("raw py span: %#v", got)
	}
	if got := Extract("`x\ny`", opts); got.Code != "x\ny" {
		t.Errorf("a name that is no language stays code: %#v", got)
	}
}

func TestPythonish(t *testing.T) {
	for _, tag := range []string{"python", "py", "python3", "python3.12", "py3.11", "python2", "pyhton", "pyton", "pythn", "ptyhon", "pycon", "python-repl", "pyrepl", "ipython"} {
		if !pythonish(tag) {
			t.Errorf("%s is Python", tag)
		}
	}
	for _, tag := range []string{"cython", "typhon", "pytb", "js", "pass", "py3k0x", "pythonista"} {
		if pythonish(tag) {
			t.Errorf("%s is not Python", tag)
		}
	}
}

func TestLabelsOutput(t *testing.T) {
	for _, l := range []string{"Output:", "**Output:**", "Result:", "Results:", "Expected output:", "*Expected output:*", "You should see:", "You'll see something like:", "This prints:", "which prints:", "It returns:", "The output will be:", "Output (truncated):", "Running it gives:", "> Output:", "&gt; Output:", "text\n\nOutput:\n", "Sample output:", "you should get:", "Here's the output:", "When you run it, you'll see:", "and the output will be:", "Running it prints:", "**Output**", "### Expected output", "Result"} {
		if !labelsOutput(l) {
			t.Errorf("%q labels output", l)
		}
	}
	for _, l := range []string{"", "Here is the code:", "Run this:", "Here's how to print a list:", "For example:", "Try it:", "Output goes to a file, run:", "output goes to stdout", "Fixed version:", "To get started, install:", "Example usage:", "Here's the final result:", "Here's the updated code:", "The print function:", "Now print the results:", "Print the output", "The result"} {
		if labelsOutput(l) {
			t.Errorf("%q does not label output", l)
		}
	}
}

func TestExtractTranscript(t *testing.T) {
	text := "Let's check it in the REPL:\n```pycon\nPython 3.12.1 (main) on linux\n>>> def square(x):\n...     return x * x\n...\n>>> square(4)\n16\n>>> print('a'); print('b')\na\nb\n>>> 1/0\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nZeroDivisionError: division by zero\n>>> x = 1  # no output\n```"
	ext := Extract(text, ExtractOptions{Platform: Discord})
	if !ext.Found || ext.Transcript == nil {
		t.Fatalf("no transcript: %#v", ext)
	}
	want := []Statement{
		{Source: "def square(x):\n    return x * x\n", Check: true},
		{Source: "square(4)\n", Expected: "16", Check: true},
		{Source: "print('a'); print('b')\n", Expected: "a\nb", Check: true},
		{Source: "1/0\n", Expected: "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nZeroDivisionError: division by zero", Check: true},
		{Source: "x = 1  # no output\n", Check: true},
	}
	if !reflect.DeepEqual(ext.Transcript.Statements, want) {
		t.Errorf("statements\n%#v\nwant\n%#v", ext.Transcript.Statements, want)
	}
	if strings.Contains(ext.Code, ">>>") || strings.Contains(ext.Code, "Python 3.12.1") {
		t.Errorf("prompts or banner in the code:\n%s", ext.Code)
	}
	golden(t, filepath.Join("extract", "rules", "transcript_program.golden"), ext.Code+"\n")

	// A transcript without any output claims nothing: run, not checked.
	quiet := Extract("```\n>>> import this\n>>> x = 2\n```", ExtractOptions{Platform: Slack})
	if quiet.Transcript == nil || quiet.Transcript.Statements[0].Check {
		t.Errorf("quiet transcript: %#v", quiet.Transcript)
	}
	// Code next to a transcript runs first, in the same globals.
	mixed := Extract("```python\ndef f():\n    return 3\n```\n```\n>>> f()\n3\n```\n", ExtractOptions{Platform: Discord})
	if mixed.Blocks != 2 || !strings.HasPrefix(mixed.Code, "def f():\n    return 3\ndef __runblock_repl") {
		t.Errorf("mixed: %d blocks\n%s", mixed.Blocks, mixed.Code)
	}
}
