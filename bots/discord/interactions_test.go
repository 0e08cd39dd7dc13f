package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/fakediscord"
)

// slash dispatches /run with the given options.
func (e *env) slash(options ...map[string]any) fakediscord.Interaction {
	return e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": e.channel, "guild_id": e.guild,
		"member": map[string]any{"user": e.user},
		"data":   map[string]any{"id": "1", "name": "run", "type": discordgo.ChatApplicationCommand, "options": options},
	})
}

func codeOption(code string) map[string]any {
	return map[string]any{"name": "code", "type": discordgo.ApplicationCommandOptionString, "value": code}
}

// callback waits for the interaction callback and returns its type and data.
func (e *env) callback(in fakediscord.Interaction) (discordgo.InteractionResponseType, fakediscord.Request) {
	e.t.Helper()
	r, err := fake.WaitRequest(e.ctx, fakediscord.Match("POST", "/interactions/"+in.ID+"/"+in.Token+"/callback"))
	if err != nil {
		e.t.Fatal(err)
	}
	var p struct {
		Type discordgo.InteractionResponseType `json:"type"`
	}
	if err := r.Decode(&p); err != nil {
		e.t.Fatal(err)
	}
	return p.Type, r
}

// original waits for the edit of the @original response that holds the
// answer (not the queue position).
func (e *env) original(in fakediscord.Interaction) fakediscord.Request {
	e.t.Helper()
	r, err := fake.WaitRequest(e.ctx, answer(fakediscord.Match("PATCH", "/webhooks/"+e.fbot.AppID+"/"+in.Token+"/messages/@original")))
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func TestSlashRunWithCodeOption(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	in := e.slash(codeOption("print(6 * 7)"))
	if typ, _ := e.callback(in); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("callback type %d, want deferred", typ)
	}
	r := e.original(in)
	if !strings.Contains(r.Content(), "ran: print(6 * 7)") {
		t.Fatalf("content %q", r.Content())
	}
	assertNoMentions(t, r)
	if got, ok := fake.Original(in.Token); !ok || got.Content != r.Content() {
		t.Fatalf("original %q", got.Content)
	}
	if jobs := runner.Jobs(); jobs[0].User != "discord:"+e.guild+":"+e.user.ID {
		t.Fatalf("job user %q", jobs[0].User)
	}
}

func TestSlashRunWithoutCodeOpensModal(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	in := e.slash()
	typ, r := e.callback(in)
	if typ != discordgo.InteractionResponseModal {
		t.Fatalf("callback type %d, want modal", typ)
	}
	var modal struct {
		Data struct {
			CustomID   string `json:"custom_id"`
			Components []struct {
				Components []struct {
					Type     discordgo.ComponentType  `json:"type"`
					CustomID string                   `json:"custom_id"`
					Style    discordgo.TextInputStyle `json:"style"`
				} `json:"components"`
			} `json:"components"`
		} `json:"data"`
	}
	if err := r.Decode(&modal); err != nil {
		t.Fatal(err)
	}
	input := modal.Data.Components[0].Components[0]
	if input.Type != discordgo.TextInputComponent || input.Style != discordgo.TextInputParagraph || input.CustomID != "code" {
		t.Fatalf("modal %s", r.JSON)
	}

	submit := e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionModalSubmit, "channel_id": e.channel, "guild_id": e.guild,
		"member": map[string]any{"user": e.user},
		"data": map[string]any{"custom_id": modal.Data.CustomID, "components": []any{
			map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "code", "value": "x = input()\nprint(x)"}}},
			map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "stdin", "value": "hi"}}},
		}},
	})
	if typ, _ := e.callback(submit); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("submit callback type %d", typ)
	}
	out := e.original(submit)
	assertNoMentions(t, out)
	jobs := runner.Jobs()
	if len(jobs) != 1 || jobs[0].Request.Code != "x = input()\nprint(x)" || jobs[0].Request.Stdin != "hi" {
		t.Fatalf("jobs %+v", jobs)
	}
}

func TestRunCodeContextMenu(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	target := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: &discordgo.User{ID: "9", Bot: true}, Content: "```py\nprint('menu')\n```"})
	in := e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": e.channel, "guild_id": e.guild,
		"member": map[string]any{"user": e.user},
		"data": map[string]any{
			"id": "2", "name": "Run code", "type": discordgo.MessageApplicationCommand, "target_id": target.ID,
			"resolved": map[string]any{"messages": map[string]any{target.ID: target}},
		},
	})
	if typ, _ := e.callback(in); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("callback type %d", typ)
	}
	r := e.original(in)
	if !strings.Contains(r.Content(), "ran: print('menu')") {
		t.Fatalf("content %q", r.Content())
	}
}

func TestInteractionNoticesAreEphemeral(t *testing.T) {
	t.Parallel()
	listed := fake.NewID()
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Channels = []string{listed} })
	cases := []struct {
		name    string
		channel string
		code    string
		want    string
	}{
		{"not python", listed, "```js\nconsole.log(1)\n```", formatting.RenderNotice(formatting.Discord, formatting.NoticeNotPython)},
		{"not allowed channel", fake.NewID(), "print(1)", formatting.RenderNotice(formatting.Discord, formatting.NoticeChannelNotAllowed)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.channel = c.channel
			in := e.slash(codeOption(c.code))
			typ, r := e.callback(in)
			var p struct {
				Data struct {
					Content         string                 `json:"content"`
					Flags           discordgo.MessageFlags `json:"flags"`
					AllowedMentions *struct {
						Parse *[]string `json:"parse"`
					} `json:"allowed_mentions"`
				} `json:"data"`
			}
			if err := r.Decode(&p); err != nil {
				t.Fatal(err)
			}
			if typ != discordgo.InteractionResponseChannelMessageWithSource || p.Data.Flags&discordgo.MessageFlagsEphemeral == 0 || p.Data.Content != c.want {
				t.Fatalf("callback %s", r.JSON)
			}
			if p.Data.AllowedMentions == nil || p.Data.AllowedMentions.Parse == nil || len(*p.Data.AllowedMentions.Parse) != 0 {
				t.Fatalf("allowed mentions %s", r.JSON)
			}
		})
	}
}

func TestInteractionRejectionIsEphemeralFollowup(t *testing.T) {
	t.Parallel()
	rejection := &executor.Error{Code: executor.ErrRateLimited, RetryAfter: 5 * time.Second}
	runner := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) { return executor.Result{}, rejection }}
	e := start(t, runner, nil)
	in := e.slash(codeOption("print(1)"))
	if typ, _ := e.callback(in); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("callback type %d", typ)
	}
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/webhooks/"+e.fbot.AppID+"/"+in.Token+"/messages/@original")); err != nil {
		t.Fatal(err)
	}
	r, err := fake.WaitRequest(e.ctx, fakediscord.Match("POST", "/webhooks/"+e.fbot.AppID+"/"+in.Token))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Flags discordgo.MessageFlags `json:"flags"`
	}
	if err := r.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Flags&discordgo.MessageFlagsEphemeral == 0 || r.Content() != formatting.RenderError(formatting.Discord, rejection) {
		t.Fatalf("follow-up %s", r.JSON)
	}
	assertNoMentions(t, r)
}

func TestInteractionLongOutputAttaches(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789\n", 400)
	runner := &fakerunner.Runner{Func: func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: long}, nil
	}}
	e := start(t, runner, nil)
	in := e.slash(codeOption("print('x')"))
	r := e.original(in)
	if len(r.Files) != 1 || r.Files[0].Name != "output.txt" || len([]rune(r.Content())) > 2000 {
		t.Fatalf("files %+v, %d characters", r.Files, len([]rune(r.Content())))
	}
}
