// Package formatting extracts runnable snippets from chat messages and
// renders executor results for Slack, Discord and the console. Pure
// functions, no I/O.
//
// # Extraction
//
// Extract finds fenced code blocks: a run of three or more backticks
// anywhere in the message (as Slack and Discord render them, also mid-line
// and closed mid-line), or a line starting with ~~~ after up to three spaces
// (as inside a list). The block ends at the next run of at least as many
// backticks (tildes: at the next line starting, after up to three spaces,
// with at least as many tildes); a fence that is never closed takes the
// rest of the message. No fence opens inside inline code: as in CommonMark,
// a run of one or two backticks opens a span closed by the next run of the
// same length within the paragraph (a blank line or a line starting with a
// fence ends it), and backticks inside the span are text ("wrap code in
// “ ``` “ fences"). CRLF and lone CR line ends are read as LF. A fence
// opened inside a block quote ("> ```py", Slack: "&gt; ```py") takes the
// quote markers off its lines.
//
// The first line of a block is its info string, never code, when it is:
//   - a single language name (case-insensitive): "python", "py", "python3",
//     "py3", "ipython" and the REPL names "pycon", "python-repl", "pyrepl"
//     are Python, and so are versioned names (python3.12, py3.11) and
//     one-letter typos of python (pyhton, pyton) that name no other
//     language; "stdin" and "input" mark standard input; about a hundred
//     other names (js, bash, json, text, output, ...) mark other languages;
//   - a language name followed by attributes: the first word up to a space,
//     ':' or '{' (```python title="fib.py", ```python:src/app.py,
//     ```py {linenos=true}, ```python showLineNumbers), unless the line
//     reads as Python (c = 1, c: int = 1, d [0]); when code rather than
//     attributes follows the name (```py print(1)), that code runs, as in
//     a one-line block (not on Discord: see below);
//   - on Discord, any line made only of letters, digits and _ + - . #:
//     Discord takes it as the language and hides it, so ```pass is a
//     language (not Python: the hint), not a line of code.
//
// Any other first line is code, so a Slack block typed as ```print(1)```
// runs, and on Slack ```pass\nprint(1)``` runs both lines. On Discord a
// language is only ever a word right before a line break (its client's
// code block rule is ^```(?:([a-z0-9_+\-.#]+?)\n)?\n*([^\n][^]*?)\n*```,
// and python-discord's eval reads blocks the same way), so a block on one
// line has no language and its content is the code, as Discord shows it:
// ```py print(1)``` runs "py print(1)" (a SyntaxError that shows the
// user what Discord showed), ```js``` runs "js"; and so does a first line
// of a word and code (```py print(1)\nprint(2)). Slack has no language at
// all, so there a one-line block ("```py print(1)```") takes its first word
// as the tag when the word is a known name and the rest does not start with
// an operator ("```c = 1```" is code), and the code after a name on the
// fence line runs. A language word alone on the line of the trigger
// ("!run js", "<@bot> py" then an untagged block) tags the untagged blocks;
// an inline span whose first line is a lone language name (`py\nx = 4`) is
// tagged the same way.
//
// An untagged block right after a line labelling output ("Output:",
// "Result:", "Expected output:", "You should see:", "This prints:", ...,
// case-insensitive, ending with a colon, or a heading that is only the
// label: "**Output**", "### Expected output") is output and never runs.
//
// A Python or untagged block whose first line (after a pasted interpreter
// banner) is a ">>> " prompt is a REPL transcript: the statements (">>> "
// and "... " lines, prompts stripped) run as the interactive interpreter
// runs them (each compiled in 'single' mode, so an expression echoes its
// repr; an exception prints its traceback and the next statement runs), and
// the other lines are the output the transcript claims. Extraction.Transcript
// lists the statements; RenderRun compares each statement's real output with
// the claimed one and says which differ (a transcript with no output line
// claims nothing and is only run). A transcript is Python even untagged.
//
// Which blocks run:
//   - Blocks tagged Python (and transcripts) run. When there is at least one, untagged blocks do
//     not run: in a message that tags its code, an untagged block is usually
//     output or prose (an LLM answer with "Output:" below the code).
//   - Otherwise untagged blocks run as Python.
//   - Blocks in other languages never run; their tags are listed in
//     Extraction.OtherLanguages for the "only Python is supported" hint.
//   - Several running blocks are joined in message order into one program,
//     separated by a single newline, so the snippets share state as the cells
//     of a notebook do and the line numbers of an error count on through the
//     blocks (the first line of the second block is the line after the last
//     line of the first).
//   - Blocks tagged stdin or input become the program's standard input
//     (several are joined in order); the text is kept exactly as typed, with
//     one final newline added. Without such a block stdin stays empty.
//   - Inline code (`print(1)`, also in double backticks) counts only when Triggered
//     is set and the message holds no fenced block at all; several spans are
//     joined like blocks.
//   - With ExtractOptions.Raw (slash command text, a modal's code field) the
//     text outside the fences is the code when no block yields code: either
//     the whole text, or the code next to a stdin block; a text that is one
//     inline code span as a whole is unwrapped.
//
// Each piece of code is cleaned the same way:
//   - Slack: the control sequences Slack puts into message text, also inside
//     code blocks, are turned back into what the user typed: <http://x|x>
//     becomes x, <http://x> becomes http://x, <mailto:a@b|a@b> becomes a@b,
//     <@U1|ann> becomes @ann (<@U1> stays @U1, the name is unknown),
//     <#C1|general> becomes #general, <!here> becomes @here; then &lt; &gt;
//     &amp; are un-escaped. Discord and console text is taken as it is.
//   - Characters pasted from web pages, word processors, phone keyboards and
//     LLM chats are normalised outside string literals and comments only (a
//     small Python tokenizer tells them apart): no-break and other Unicode
//     spaces become a space, zero-width characters (ZWSP, ZWNJ, ZWJ, word
//     joiner, BOM, soft hyphen, direction marks and overrides) are removed,
//     and curly quotes become straight quotes (a string opened by a curly
//     quote also closes at one). Python rejects all of these outside strings
//     and comments (ZWJ and ZWNJ up to Python 3.12; later versions allow
//     them inside identifiers), so a program that was valid is not changed,
//     and text inside strings, such as an emoji with ZWJ, is kept exactly.
//     TestPastedCodeCompiles checks both against Python's compiler.
//   - Leading blank lines and trailing whitespace of the block are dropped,
//     and the common leading indentation of its lines is removed (dedent, as
//     textwrap.dedent, keeping whitespace-only lines); all other whitespace is
//     kept exactly.
//
// # Rendering
//
// Render turns an executor.Result into a Reply: a status line (OK, the error
// line, timed out after N s, memory limit of N MiB exceeded, output limit
// reached), stdout in a code block, then stderr in a second block: on an
// error the useful tail of the traceback. The runner's own frames are
// dropped from it: the frames before the first frame of the user's code
// (file "<snippet>", SnippetFile) and frames of those same files deeper in
// the stack, so the traceback starts at the user's line numbers; frames of
// the standard library the code called into stay. "(no output)" says so
// when both streams are empty.
//
// RenderRun renders the run of an extraction. For a REPL transcript it takes
// the markers framing each statement's output out of stdout (the reply shows
// the output as the statements printed it) and adds a transcript check
// after the output: how many statements printed something other than the
// transcript shows and, in a code block, each such statement with the
// output claimed and the output got ("expected: 0.3", "got:
// 0.30000000000000004"). Outputs are compared line by line without trailing
// blanks, memory addresses (object at 0x7f…) are equal, and a traceback is
// compared by its last line, the exception. The check is bounded (two lines
// a side, 50 characters a line, about 700 units in all, then "… N more
// differences") so the reply still fits the platform.
//
// The inline view of the output is cut to RenderOptions.MaxLines lines and
// MaxChars characters (code points, line breaks not counted; defaults 15 and
// 1500). Stdout keeps its head ("… N more lines"), stderr keeps its tail;
// when both are shown they share the budget. When anything was cut,
// Reply.Full holds the whole output as plain text for an attachment (stdout,
// then stderr after a "--- stderr ---" line when both are there). A cut
// never splits a UTF-8 sequence, and avoids splitting a grapheme (combining
// marks, variation selectors, skin tones, ZWJ sequences, flag pairs) unless a
// single grapheme is longer than the budget.
//
// The reply text stays within the platform's limit, counted in UTF-16 code
// units, which is never less than the count in code points: 2000 for a
// Discord message, 3000 for Slack (a section block; a message allows 40,000).
// When the status line, notes and escaping would pass it, the inline view is
// shrunk until the text fits. The console has no limit.
//
// # Safety
//
// Output is text from an untrusted program. Before any markup it is made
// valid UTF-8 (invalid bytes and lone surrogates become U+FFFD), ANSI escape
// sequences and control characters other than newline and tab are removed
// (on Discord colours are kept as below),
// carriage returns and backspaces overwrite the line as a terminal would,
// bidirectional overrides are removed and Unicode line separators become
// newlines. Inside code blocks a zero-width space breaks every run of three
// or more backticks ("“\u200b`"), so output can never close its code
// block, and on Slack &, < and > are escaped (so <!channel>, <!here>,
// <@U…>, <!subteam^…> are text); nothing else is changed, so output copied
// out of a reply is what the program printed. The error line in the status
// line is shown with backticks replaced by ˋ (U+02CB). Mentions are left as
// they are: the adapters send every message with mentions disabled (Discord:
// allowed_mentions with "parse": [] on every send and edit, interactions and
// webhooks included; Slack: parse=none and link_names=false), and their
// tests check that no payload lets a mention ping. Reply.Full is only made
// valid and free of control characters: a file does not ping.
//
// Colours. Discord is the only platform that renders ANSI colour: in a code
// block tagged ansi, the SGR codes 0 (reset), 1 (bold), 4 (underline), 30–37
// (foreground) and 40–47 (background). On Discord the output's SGR
// sequences (a program's colours, Python 3.13's coloured tracebacks) are
// read as a terminal reads them: the state carries across lines, 22, 24, 39
// and 49 turn one attribute off, bright colours (90–97, 100–107), 256
// colours and truecolour become the nearest of the eight colours, and other
// SGR codes (italic, reverse, ...) and every other escape sequence (cursor
// moves, OSC titles and hyperlinks, C1 controls) are dropped. A block with a
// styled character shown is tagged ansi and its lines carry only the codes
// Discord renders, each line on its own: it starts in the default style and
// ends with a reset when it changed it. The codes are put in after the view
// is cut, which cuts plain text, so a cut never splits a sequence nor leaves
// a colour open, and the 2000-unit limit counts them exactly. The error in
// the status line, Reply.Full and the other platforms get plain text.
//
// Names a snippet chose (the files it wrote, in the files note) and every
// note and inline code span are shown with control characters, C1
// controls, bidirectional overrides and isolates, line separators and bytes
// that are not UTF-8 written as Go escapes (\x1b, \u009b, \u202e, \n,
// \xff), so a name cannot forge a line or drive a terminal. The console's
// text, which the console adapter and runblock exec print to a terminal,
// passes the same escaping as a whole (newline and tab kept), so no path of
// the renderer hands ESC, CSI or another control to the terminal raw.
package formatting
