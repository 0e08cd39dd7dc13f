package fakediscord_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/internal/fakediscord"
)

func TestAttachmentsAndUploadLimits(t *testing.T) {
	t.Parallel()
	bot := fake.NewBot("files")
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	channel := fake.NewID()

	a := fake.Attachment("data.csv", "text/csv", []byte("a\n"), -1)
	resp, err := http.Get(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "a\n" || fake.Downloads(a.URL) != 1 {
		t.Errorf("attachment served %q, %d downloads", body, fake.Downloads(a.URL))
	}

	var eleven []*discordgo.File
	for i := range 11 {
		eleven = append(eleven, &discordgo.File{Name: fmt.Sprintf("f%d.txt", i), Reader: bytes.NewReader([]byte("x"))})
	}
	var re *discordgo.RESTError
	_, err = s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{Content: "many", Files: eleven})
	if !errors.As(err, &re) || re.Response.StatusCode != 400 || re.Message == nil || re.Message.Code != 50035 {
		t.Errorf("11 files: %v", err)
	}
	huge := &discordgo.File{Name: "huge.bin", Reader: bytes.NewReader(make([]byte, fakediscord.MaxUploadBytes+1))}
	_, err = s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{Content: "huge", Files: []*discordgo.File{huge}})
	if !errors.As(err, &re) || re.Response.StatusCode != 413 || re.Message == nil || re.Message.Code != discordgo.ErrCodeRequestEntityTooLarge {
		t.Errorf("over 10 MiB: %v", err)
	}

	m, err := s.ChannelMessageSendComplex(channel, &discordgo.MessageSend{Content: "one", Files: []*discordgo.File{{Name: "a.png", ContentType: "image/png", Reader: bytes.NewReader([]byte("png"))}}})
	if err != nil {
		t.Fatal(err)
	}
	content := "two"
	m, err = s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: m.ID, Channel: channel, Content: &content, Attachments: &[]*discordgo.MessageAttachment{},
		Files: []*discordgo.File{{Name: "b.png", ContentType: "image/png", Reader: bytes.NewReader([]byte("b"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Filename != "b.png" {
		t.Fatalf("after the edit: %+v", m.Attachments)
	}
	if data, ok := fake.AttachmentData(m.Attachments[0].URL); !ok || string(data) != "b" {
		t.Errorf("b.png serves %q", data)
	}
}
