package agent

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// Who names a conversation after its first answer (Config.Titles).
const (
	TitlesModel     = "model"      // the model writes a short title
	TitlesFirstLine = "first_line" // the first line of the first message stays
)

// Title limits.
const (
	// MaxTitleWords is the most words a title by the model keeps.
	MaxTitleWords = 8
	// titleTimeout bounds the model call that writes a title.
	titleTimeout = time.Minute
	// titleInputBytes is how much of the first message and answer the
	// title call shows the model.
	titleInputBytes = 2000
	// titleAnswerTokens is what a title call reserves of the owner's
	// budget for its answer (budget.go).
	titleAnswerTokens = 64
)

// titlePrompt asks the model for a title.
const titlePrompt = "Write a title of at most 8 words for the conversation below: what it is about, in the conversation's language. Answer with the title only, without quotes or a final period."

// startTitle has the model name t's conversation in the background, after
// its first answer. A failure is logged; the turn has ended already.
func (r *Runner) startTitle(t *turn) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), titleTimeout)
		watched := make(chan struct{})
		go func() { // Close stops the call
			defer close(watched)
			select {
			case <-r.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		defer func() { cancel(); <-watched }()
		if err := r.writeTitle(ctx, t); err != nil {
			if errors.Is(err, ErrUserTitled) {
				r.log.Debug("title_skipped", "conversation_id", t.conv.ID, "reason", "renamed by a user")
				return
			}
			r.log.Warn("title_failed", "conversation_id", t.conv.ID, "err", err)
		}
	}()
}

// writeTitle asks the conversation's model for a title and writes it as a
// renamed event, unless a user has named the conversation meanwhile.
func (r *Runner) writeTitle(ctx context.Context, t *turn) error {
	if c, err := t.st.Conversation(ctx, t.conv.ID); err != nil {
		return err
	} else if c.UserTitled {
		return ErrUserTitled // renamed during the turn: no need to ask
	}
	req := ChatRequest{Model: t.conv.Model, Messages: []ModelMessage{
		{Role: RoleSystem, Content: []Content{Text(titlePrompt)}},
		{Role: RoleUser, Content: []Content{Text("User: " + clip(text(t.prompt), titleInputBytes) + "\n\nAssistant: " + clip(t.answer, titleInputBytes))}},
	}}
	done, err := r.admit(ctx, OwnerOf(t.conv), t.payer(), r.est.tokens(t.conv.ID, len(titlePrompt)+len(text(req.Messages[1].Content)))+titleAnswerTokens)
	if err != nil {
		return err // a title is a model call made for the owner: counted in their budget
	}
	resp, err := r.cfg.Model.Chat(ctx, req, func(Delta) error { return nil })
	done(resp.Usage)
	if err != nil {
		return err
	}
	title := cleanModelTitle(resp.Text)
	if title == "" {
		return errors.New("the model answered no title")
	}
	rec := &Record{Event: r.agentEvent(AgentEvent{Type: AgentRenamed, ConversationID: t.conv.ID, Title: title}), AutoTitle: true}
	return t.st.Append(ctx, rec)
}

// cleanModelTitle keeps the first line of a model's answer, without
// quotes, markup or a final period, at most MaxTitleWords words and
// MaxTitleRunes characters.
func cleanModelTitle(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "</think>"); i >= 0 { // a model that thinks inline
		s = strings.TrimSpace(s[i+len("</think>"):])
	}
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimPrefix(strings.TrimSpace(s), "Title:")
	s = strings.Trim(strings.TrimSpace(s), "\"'`*#“”«» ")
	words := strings.Fields(s)
	if len(words) > MaxTitleWords {
		words = words[:MaxTitleWords]
	}
	s = strings.TrimRight(strings.Join(words, " "), ".")
	if utf8.RuneCountInString(s) > MaxTitleRunes {
		s = string([]rune(s)[:MaxTitleRunes])
	}
	if !utf8.ValidString(s) {
		return ""
	}
	return s
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
