package discord

import (
	"time"

	"github.com/bwmarrin/discordgo"
)

// answer is what the Bot remembers of a message it answered, so that an
// edit re-runs it into the same reply and a delete removes the reply.
type answer struct {
	channelID string
	guildID   string
	user      string    // rate-limit key of the author
	at        time.Time // when the message was first answered: the edit window starts here
	explicit  bool      // triggered by the prefix, a mention or a DM
	content   string    // the message content last run, to tell edits from embed updates
	replyID   string    // "" while the first run is in flight
	ok        bool      // the reply shows a success (✅)
	ran       bool      // the reply shows a run, not a rejection or notice
	// reactionUnknown: the reply was found on Discord (recall.go), so which
	// of ✅ and ❌ the message shows is not known.
	reactionUnknown bool
	gen             int  // bumped by every re-run; only the newest one edits the reply
	deleted         bool // the message went away while its first run was in flight
	// edited is the newest edit that came while the first run was in
	// flight; it is re-run once the first reply is there.
	edited *discordgo.Message
}
