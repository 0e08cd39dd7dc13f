package discord

import (
	"net/url"
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// Command names and ids.
const (
	CommandRun     = "run"      // slash command, option "code"
	CommandRunCode = "Run code" // message context-menu command
	optionCode     = "code"
	optionReset    = "reset"
	modalRun       = "runblock:run"
	inputCode      = "code"
	inputStdin     = "stdin"
)

// Permissions is exactly what the bot needs in a channel: see it, read the
// message it answers (history, for replies and the reaction trigger), post
// (also in threads), attach output.txt, react ⏳/✅/❌, and offer its
// application commands.
const Permissions = discordgo.PermissionViewChannel |
	discordgo.PermissionSendMessages |
	discordgo.PermissionSendMessagesInThreads |
	discordgo.PermissionReadMessageHistory |
	discordgo.PermissionAttachFiles |
	discordgo.PermissionAddReactions |
	discordgo.PermissionUseApplicationCommands

// InviteURL is the OAuth2 URL that adds the bot to a server with its
// commands and exactly Permissions.
func InviteURL(appID string) string {
	q := url.Values{}
	q.Set("client_id", appID)
	q.Set("scope", "bot applications.commands")
	q.Set("permissions", strconv.FormatInt(Permissions, 10))
	return "https://discord.com/oauth2/authorize?" + q.Encode()
}

// commands are registered at start-up by bulk overwrite, so a renamed or
// removed command does not linger.
func commands() []*discordgo.ApplicationCommand {
	dm := true
	return []*discordgo.ApplicationCommand{
		{
			Type:         discordgo.ChatApplicationCommand,
			Name:         CommandRun,
			Description:  "Run a Python snippet",
			DMPermission: &dm,
			Options: []*discordgo.ApplicationCommandOption{{
				Type:        discordgo.ApplicationCommandOptionString,
				Name:        optionCode,
				Description: "Python code (leave empty for a multi-line editor)",
				Required:    false,
			}, {
				Type:        discordgo.ApplicationCommandOptionBoolean,
				Name:        optionReset,
				Description: "Start this thread's session fresh: its variables and files go",
				Required:    false,
			}},
		},
		{
			Type:         discordgo.MessageApplicationCommand,
			Name:         CommandRunCode,
			DMPermission: &dm,
		},
	}
}

// runModal is the editor /run opens when it has no code.
func runModal() *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{
			CustomID: modalRun,
			Title:    "Run Python",
			Components: []discordgo.MessageComponent{
				discordgo.ActionsRow{Components: []discordgo.MessageComponent{
					discordgo.TextInput{
						CustomID:    inputCode,
						Label:       "Code",
						Style:       discordgo.TextInputParagraph,
						Placeholder: "print('hello')",
						Required:    true,
						MaxLength:   4000,
					},
				}},
				discordgo.ActionsRow{Components: []discordgo.MessageComponent{
					discordgo.TextInput{
						CustomID:  inputStdin,
						Label:     "Standard input (optional)",
						Style:     discordgo.TextInputParagraph,
						Required:  false,
						MaxLength: 4000,
					},
				}},
			},
		},
	}
}
