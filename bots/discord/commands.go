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
	optionExport   = "export"
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

// UserInstallURL is the OAuth2 URL that adds the app to a person's account
// (a user install): /run and Apps → Run code then work for them in any
// server, DM or group DM, the answers coming through the interaction.
func UserInstallURL(appID string) string {
	q := url.Values{}
	q.Set("client_id", appID)
	q.Set("integration_type", "1")
	q.Set("scope", "applications.commands")
	return "https://discord.com/oauth2/authorize?" + q.Encode()
}

// commands are registered at start-up by bulk overwrite, so a renamed or
// removed command does not linger. Global ones (guildID "") are for both
// installs, the server's and a person's, in servers, the bot's DM and other
// DMs; a guild's commands are for that server's install only, as Discord
// ignores contexts and integration types there.
func commands(guildID string) []*discordgo.ApplicationCommand {
	run := &discordgo.ApplicationCommand{
		Type:        discordgo.ChatApplicationCommand,
		Name:        CommandRun,
		Description: "Run a Python snippet",
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
		}, {
			Type:        discordgo.ApplicationCommandOptionBoolean,
			Name:        optionExport,
			Description: "Post this thread's session as a Jupyter notebook (.ipynb)",
			Required:    false,
		}},
	}
	runCode := &discordgo.ApplicationCommand{Type: discordgo.MessageApplicationCommand, Name: CommandRunCode}
	if guildID == "" {
		everywhere := []discordgo.InteractionContextType{
			discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM, discordgo.InteractionContextPrivateChannel,
		}
		installs := []discordgo.ApplicationIntegrationType{discordgo.ApplicationIntegrationGuildInstall, discordgo.ApplicationIntegrationUserInstall}
		for _, c := range []*discordgo.ApplicationCommand{run, runCode} {
			c.Contexts, c.IntegrationTypes = &everywhere, &installs
		}
	}
	return []*discordgo.ApplicationCommand{run, runCode, settingsCommand(guildID == "")}
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
