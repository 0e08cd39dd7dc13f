package discord

import "strings"

// A guild may choose a per-user rate lower than the operator's
// (RUNBLOCK_USER_RATE, which the scheduler enforces everywhere): the bot
// holds its users to it before their runs reach the scheduler
// (choices.Held, with the guild of each user's key).

// guildOfUser is the guild of a user key (userKey), "" for a DM.
func guildOfUser(key string) string {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] != Platform || parts[1] == "dm" {
		return ""
	}
	return parts[1]
}
