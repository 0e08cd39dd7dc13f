// Package formatting extracts runnable snippets from chat messages and
// renders executor results for Slack, Discord and the console. Pure
// functions, no I/O.
package formatting

// STUB — replaced by the formatting helper. Signatures are the contract.

import "github.com/runblock/runblock/executor"

// Platform selects the markup dialect.
type Platform int

// Platforms.
const (
	Console Platform = iota
	Slack
	Discord
)

// ExtractOptions says how a message may yield code.
type ExtractOptions struct {
	Platform Platform
	// Triggered: the message carried an explicit trigger (/run, !run, a bot
	// mention; the adapter strips the trigger itself), so inline `code` counts.
	Triggered bool
	// Raw: the text is code itself when it holds no fence (slash command
	// text, a modal's code field).
	Raw bool
}

// Extraction is what a message yielded.
type Extraction struct {
	Found bool
	Code  string
	Stdin string
	// OtherLanguages lists the tags of fenced blocks in other languages,
	// used for the "only Python is supported" hint when nothing was found.
	OtherLanguages []string
}

// Extract finds the Python snippet (and stdin block) in a message.
func Extract(text string, opts ExtractOptions) Extraction { panic("stub") }

// RenderOptions bounds the inline view.
type RenderOptions struct {
	MaxLines int // default 15
	MaxChars int // default 1500
}

// Reply is a rendered answer.
type Reply struct {
	Text string // what to post, within the platform's limits
	// Full is the whole output as plain text when Text had to be cut, else "".
	Full string
	OK   bool // success: ✅, else ❌
}

// Render renders a finished run.
func Render(p Platform, res executor.Result, opts RenderOptions) Reply { panic("stub") }

// Notice is a reply that is not a run.
type Notice int

// Notices.
const (
	NoticeNoCode Notice = iota
	NoticeNotPython
	NoticeChannelNotAllowed
)

// RenderNotice renders a notice ("only Python is supported", ...).
func RenderNotice(p Platform, n Notice) string { panic("stub") }

// RenderError renders a rejection or failure for chat: busy, rate limited
// ("try again in 12 s"), too large, shutting down; anything else becomes a
// generic line (details belong in the log, not the chat).
func RenderError(p Platform, err error) string { panic("stub") }

// RenderProgress renders "queued (2 ahead)" / "running".
func RenderProgress(p Platform, pr executor.Progress) string { panic("stub") }
