package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Compaction keeps every model call inside the model's context window
// (DESIGN §10.1). Before each call the turn estimates the prompt; when it
// would not fit the budget (the window less a reserve for the answer) it
// compacts working memory, in this order:
//
//  1. tool results of earlier turns become stubs naming the tool, the size
//     and the call id (the message table keeps them whole);
//  2. the oldest turns are summarized by the model in one call into one
//     summary entry, the latest turns kept verbatim.
//
// The system prompt, the current user message and the pairing of every
// tool call with its result are never dropped: a summary always replaces
// whole turns. A single tool result larger than a quarter of the budget is
// cut (head and tail, a marker between) in what is sent; memory and the
// audit keep it whole. Only working memory is rewritten; a summary is also
// persisted as a summary_message with its message event.

// cutMarker separates the head and tail of a cut tool result.
const cutMarker = "\n\n[… %d bytes cut to fit the model's context window; the whole result is in the conversation's history …]\n\n"

// minTranscriptEntry is the fewest bytes an entry keeps in a summary's
// transcript.
const minTranscriptEntry = 120

// summaryInstruction opens the summary call's system message.
const summaryInstruction = `You compress the early part of a conversation between a user and an AI assistant (with tool calls) so that the assistant can continue it without the original messages. Write a concise summary in the conversation's language: the user's goals and requests, decisions and answers given, facts, names, numbers, file paths and results of tool calls that may matter later, and anything left open. Do not add anything that is not in the transcript. Answer with the summary only.

Transcript:
`

// shortInstruction replaces summaryInstruction in a window too small for
// it.
const shortInstruction = `Summarize this start of a conversation for the assistant that continues it: goals, facts, decisions, open questions. Summary only.

Transcript:
`

// summaryAsk is the summary call's user message.
const summaryAsk = "Write the summary now."

// minSummaryTokens is the least room worth a summary call: below it the
// summary is a note saying what was left out (leftOut).
const minSummaryTokens = 32

// errNoRoom is a summary call the window has no room for, or that the
// model refused for length: the compaction leaves a note instead.
var errNoRoom = errors.New("no room for a summary call")

// budget is the room of one model call.
type budget struct {
	window int // tokens of the model's window
	limit  int // what the prompt may use: window less the answer's reserve
}

// budget is the room of a call to model (the conversation's model id).
func (r *Runner) budget(ctx context.Context, model string, harder bool) budget {
	w := r.window(ctx, model)
	b := budget{window: w, limit: w - reserve(w)}
	if harder {
		b.limit = b.limit * 3 / 4
	}
	return b
}

// prepared is what goes to the model for one call.
type prepared struct {
	send   []ModelMessage // memory with huge tool results cut
	bytes  int            // raw size of send and the tools
	tokens int            // estimated prompt tokens
	budget budget
	// noTools: the tools' definitions cannot fit the window with the
	// system prompt and this turn's message, so the call goes without
	// them (a tiny window still answers).
	noTools bool
}

// prepare returns what to send for one call on mem, compacting mem first
// (and persisting that) when it would not fit. harder compacts as far as
// possible: every earlier turn summarized, the tool results of the current
// turn but its last round elided, a smaller budget.
func (t *turn) prepare(mem *[]ModelMessage, specs []ToolSpec, harder bool) (prepared, error) {
	b := t.r.budget(t.ctx, t.conv.Model, harder)
	sb := specsBytes(specs) + len(t.recall) // the memory section goes with every call, like the specs
	p := t.measure(*mem, sb, b)
	if p.tokens <= b.limit && !harder {
		return p, nil
	}
	noTools := false
	cur := lastUser(*mem)
	if cur >= 0 {
		// Refused here only when it would be in a new conversation too:
		// the calibration of this one may overestimate (a chat template's
		// fixed preamble makes a short prompt look dense), and compaction
		// can always bring memory down to the system prompt and this turn.
		sys := 0
		if (*mem)[0].Role == RoleSystem {
			sys = t.r.est.least(t.conv.ID, rawBytes((*mem)[0], false))
		}
		msg := t.r.est.least(t.conv.ID, rawBytes((*mem)[cur], false))
		recall, tools := t.r.est.least(t.conv.ID, len(t.recall)), t.r.est.least(t.conv.ID, specsBytes(specs))
		switch {
		case sys+msg+recall+tools <= b.limit:
		case sys+msg+recall <= b.limit && len(specs) > 0:
			// The tools cannot fit with this message: the call goes
			// without them rather than not at all.
			noTools, sb = true, len(t.recall)
			t.r.log.Info("tools_left_out", "conversation_id", t.conv.ID, "window", b.window, "tools", len(specs), "tools_tokens", tools)
			if p = t.measure(*mem, sb, b); p.tokens <= b.limit && !harder {
				p.noTools = true
				return p, nil
			}
		default:
			return p, tooSmall(b.window, contextParts{system: sys, memory: recall, message: msg, tools: tools, toolCount: len(specs), answer: reserve(b.window)})
		}
	}
	before := p.tokens
	// 1: elide the tool results of earlier turns (in what is sent only).
	next := elide(*mem, cur, harder)
	p = t.measure(next, sb, b)
	if p.tokens <= b.limit && !harder {
		p.noTools = noTools
		return p, nil
	}
	// 2: summarize the oldest turns; the kept ones keep their stubs.
	keep := keepFrom(next, cur, t.r.est, t.conv.ID, b.limit/2, harder)
	compacted, m, err := t.summarize(*mem, next, keep, cur, b, before, sb)
	if err != nil {
		p.noTools = noTools
		return p, err
	}
	if compacted != nil {
		*mem = compacted
		p = t.measure(compacted, sb, b)
		t.r.log.Info("context_compacted", "conversation_id", t.conv.ID, "replaces", m.Replaces, "tokens_before", before, "tokens_after", p.tokens)
	}
	if p.tokens > b.limit && !harder {
		// The current turn alone is this big (many tool rounds): send its
		// earlier rounds' results as stubs too, rather than have the model
		// refuse (or, like Ollama, silently drop the start of the prompt).
		p = t.measure(elide(*mem, lastUser(*mem), true), sb, b)
	}
	p.noTools = noTools
	return p, nil
}

// measure cuts huge tool results of mem and estimates the prompt.
func (t *turn) measure(mem []ModelMessage, specsBytes int, b budget) prepared {
	maxTokens := max(b.limit/4, 64)
	send := mem
	copied := false
	for i, m := range mem {
		if m.Role != RoleTool {
			continue
		}
		n := rawBytes(m, false)
		tok := t.r.est.tokens(t.conv.ID, n)
		if tok <= maxTokens {
			continue
		}
		if !copied {
			send = append([]ModelMessage(nil), mem...)
			copied = true
		}
		keepBytes := int(float64(n) * float64(maxTokens) / float64(tok))
		send[i].Content = []Content{Text(cut(text(m.Content), keepBytes))}
	}
	bytes := promptBytes(send, specsBytes)
	return prepared{send: send, bytes: bytes, tokens: t.r.est.tokens(t.conv.ID, bytes), budget: b}
}

// cut keeps about n bytes of s: its head and tail with a marker between,
// on rune boundaries.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 64)
	head, tail := n/2, n/4 // the marker and the boundaries take the rest
	h := s[:head]
	for len(h) > 0 && !validEnd(h) {
		h = h[:len(h)-1]
	}
	tl := s[len(s)-tail:]
	for len(tl) > 0 && !validStart(tl) {
		tl = tl[1:]
	}
	return h + fmt.Sprintf(cutMarker, len(s)-len(h)-len(tl)) + tl
}

func validStart(s string) bool { return s[0]&0xC0 != 0x80 }

func validEnd(s string) bool {
	// the last rune is complete when the string is valid UTF-8 at its end
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		c := s[i]
		if c&0xC0 != 0x80 { // a rune's first byte
			size := 1
			switch {
			case c >= 0xF0:
				size = 4
			case c >= 0xE0:
				size = 3
			case c >= 0xC0:
				size = 2
			}
			return i+size == len(s)
		}
	}
	return false
}

func text(cs []Content) string {
	var b strings.Builder
	for i, c := range cs {
		if c.Type != ContentText && c.Type != ContentFile { // a file's part in memory holds its text
			continue
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Body)
	}
	return b.String()
}

// elide returns mem with the results of tool calls before index cur (the
// current user message) replaced by stubs; harder also elides the current
// turn's results but those of its last round.
func elide(mem []ModelMessage, cur int, harder bool) []ModelMessage {
	end := cur
	if harder {
		end = len(mem)
		for i := len(mem) - 1; i > cur; i-- {
			if mem[i].Role == RoleAssistant {
				end = i
				break
			}
		}
	}
	out := append([]ModelMessage(nil), mem...)
	for i := 0; i < end && i < len(out); i++ {
		m := out[i]
		if m.Role != RoleTool || isStub(m) {
			continue
		}
		body := text(m.Content)
		out[i].Content = []Content{Text(fmt.Sprintf("%s[result elided to save context: tool %s, %d bytes, call %s; the whole result is in the conversation's history]", stubPrefix, m.Name, len(body), m.ToolCallID))}
	}
	return out
}

const stubPrefix = "\u200b" // marks a stub, so it is not elided twice

func isStub(m ModelMessage) bool {
	return len(m.Content) == 1 && strings.HasPrefix(m.Content[0].Body, stubPrefix)
}

// keepFrom is the index from which mem is kept verbatim: the earliest user
// message (a turn's start) at or before cur whose turns fit in limit tokens;
// cur itself when none does, or with harder.
func keepFrom(mem []ModelMessage, cur int, est *estimator, id string, limit int, harder bool) int {
	if cur < 0 || harder {
		return max(cur, 0)
	}
	total := 0
	for i := len(mem) - 1; i >= cur; i-- {
		total += rawBytes(mem[i], i > cur)
	}
	keep := cur
	for i := cur - 1; i > 0; i-- {
		total += rawBytes(mem[i], false)
		if est.tokens(id, total) > limit {
			break
		}
		if mem[i].Role == RoleUser {
			keep = i
		}
	}
	return keep
}

// summarize replaces the entries of full before keep (but the system
// prompt) with one summary, made by the model in one call, followed by
// elided[keep:], and persists that memory with a summary_message. It
// returns nil when there is nothing to summarize. The summary is sized to
// the room the kept entries leave in the budget; when they leave too
// little, only the current turn (from cur) is kept. When even then the
// window has no room for a summary call, or the model refuses it for
// length, the summary is a note saying what was left out: memory is then
// the system prompt, the note and the current turn, which fits whenever
// the turn would fit a new conversation.
func (t *turn) summarize(full, elided []ModelMessage, keep, cur int, b budget, before, specsBytes int) ([]ModelMessage, *Message, error) {
	mem := full
	start := 0
	if len(mem) > 0 && mem[0].Role == RoleSystem {
		start = 1
	}
	room := t.summaryRoom(elided, start, keep, cur, b, specsBytes)
	if room < minSummaryTokens && keep < cur {
		keep = cur
		room = t.summaryRoom(elided, start, keep, cur, b, specsBytes)
	}
	if keep-start < 1 {
		return nil, nil, nil
	}
	old := mem[start:keep]
	replaces := 0
	for _, m := range old {
		if m.Role != RoleSummary {
			replaces++
		}
	}
	if replaces == 0 {
		return nil, nil, nil
	}
	summary, err := t.summaryCall(old, b, room)
	if errors.Is(err, errNoRoom) {
		t.r.log.Warn("context_summary_skipped", "conversation_id", t.conv.ID, "window", b.window, "room", room, "replaces", replaces)
		summary, err = leftOut(old, replaces, b.window, t.r.est.bytes(t.conv.ID, max(room, 0))), nil
	}
	if err != nil {
		return nil, nil, err
	}
	next := make([]ModelMessage, 0, len(mem)-len(old)+1)
	next = append(next, mem[:start]...)
	next = append(next, ModelMessage{Role: RoleSummary, Content: []Content{Text(summary)}})
	next = append(next, elided[keep:]...)
	afterBytes := promptBytes(next, specsBytes)
	after := t.r.est.tokens(t.conv.ID, afterBytes)
	m := Message{Type: MessageSummary, ConversationID: t.conv.ID, Summary: summary, Replaces: replaces, TokensBefore: before, TokensAfter: after}
	span(&m, old, mem[keep:])
	rec := t.r.messageRecord(m)
	rec.Memory, rec.ReplaceMemory = next, true
	rec.Context = &ContextSize{Tokens: after, Window: b.window, Bytes: afterBytes} // keeps the calibration
	if err := t.emit(rec); err != nil {
		return nil, nil, err
	}
	return next, rec.Event.Event.Message, nil
}

// span records on summary m which turns it summarized (the user entries
// of old) and where the kept ones start (kept[0], a user entry: the cut is
// always at a turn's start).
func span(m *Message, old, kept []ModelMessage) {
	if len(kept) > 0 && kept[0].Role == RoleUser {
		m.KeptID = kept[0].MessageID
	}
	first := true
	for _, e := range old {
		if e.Role != RoleUser {
			continue
		}
		if first {
			m.FirstID, m.FirstText = e.MessageID, opening(e.Content)
			first = false
		}
		m.LastID, m.LastText = e.MessageID, opening(e.Content)
	}
}

// openingRunes is how much of a message names it in a summary's span.
const openingRunes = 40

// opening is the first words of a message: firstWords at about
// openingRunes.
func opening(content []Content) string { return firstWords(content, openingRunes) }

// summaryRoom is the tokens a summary may take in budget b when mem is
// kept from keep: the limit less the system prompt, the tools and the
// kept entries as compact as they can be sent (the current turn's earlier
// rounds elided too).
func (t *turn) summaryRoom(mem []ModelMessage, start, keep, cur int, b budget, specsBytes int) int {
	kept := promptBytes(elide(mem, cur, true)[keep:], specsBytes) + messageOverhead
	if start > 0 {
		kept += rawBytes(mem[0], false)
	}
	return b.limit - t.r.est.tokens(t.conv.ID, kept)
}

// leftOut is the summary of a compaction without a summary call: a note
// saying what was left out, with the summary old began with (a previous
// compaction's) as far as about limit bytes allow.
func leftOut(old []ModelMessage, replaces int, window, limit int) string {
	note := fmt.Sprintf("[%d earlier messages were left out: the model's context window (%d tokens) has no room to summarize them.]", replaces, window)
	if len(note) > limit {
		return "[Earlier messages were left out to fit the model's context window.]"
	}
	if len(old) > 0 && old[0].Role == RoleSummary {
		const prefix = "\nWhat came before them, in short: "
		if prev := text(old[0].Content); limit-len(note)-len(prefix) >= minTranscriptEntry {
			note += prefix + cut(prev, limit-len(note)-len(prefix)-len(cutMarker))
		}
	}
	return note
}

// summaryCall asks the model (or the summary model) for the summary of
// old, in at most room tokens. It is errNoRoom when the window cannot hold
// the call, or the model refused it for length.
func (t *turn) summaryCall(old []ModelMessage, b budget, room int) (string, error) {
	maxTokens := min(max(b.window/8, 128), 1024, room)
	if maxTokens < minSummaryTokens {
		return "", errNoRoom
	}
	instruction := summaryInstruction
	callRoom := func() int {
		return (b.window - maxTokens - t.r.est.tokens(t.conv.ID, len(instruction)+len(summaryAsk)+4*messageOverhead)) * 4 / 5
	}
	transcriptRoom := callRoom()
	if transcriptRoom < minSummaryTokens {
		instruction = shortInstruction
		transcriptRoom = callRoom()
	}
	if transcriptRoom < minSummaryTokens {
		return "", errNoRoom
	}
	limit := t.r.est.bytes(t.conv.ID, transcriptRoom)
	transcript := renderTranscript(old, limit)
	req := ChatRequest{
		Model:     cmp.Or(t.r.cfg.SummaryModel, t.conv.Model),
		MaxTokens: maxTokens,
		Messages: []ModelMessage{
			{Role: RoleSystem, Content: []Content{Text(instruction + transcript)}},
			{Role: RoleUser, Content: []Content{Text(summaryAsk)}},
		},
	}
	done, err := t.r.admit(t.ctx, OwnerOf(t.conv), t.payer(), t.r.est.tokens(t.conv.ID, len(instruction)+len(transcript)+len(summaryAsk))+maxTokens)
	if err != nil {
		return "", err // a summary is a model call made for the owner: their budget holds it too
	}
	resp, err := t.r.cfg.Model.Chat(t.ctx, req, func(Delta) error { return t.ctx.Err() })
	done(resp.Usage)
	t.summaryUsage = t.summaryUsage.Add(resp.Usage)
	var ce *ContextExceeded
	if err != nil && errors.As(err, &ce) && t.ctx.Err() == nil {
		if ce.Window > 0 && ce.Window < b.window {
			t.r.windows.Learn(t.conv.Model, ce.Window)
		}
		return "", errNoRoom
	}
	if err != nil {
		if t.ctx.Err() != nil {
			return "", context.Cause(t.ctx)
		}
		return "", Errorf(CodeModelError, "the conversation outgrew the model's context window and summarizing its older part failed: %v", err)
	}
	s := strings.TrimSpace(resp.Text)
	if s == "" {
		return "", Errorf(CodeModelError, "the conversation outgrew the model's context window and the model answered the summary request with nothing")
	}
	// A model that ignores max_tokens still gets a bounded summary, and
	// the summary fits the room whatever the calibration says of it.
	return cut(s, min(maxTokens*bytesPerToken*2, max(t.r.est.bytes(t.conv.ID, room), 2*minTranscriptEntry))), nil
}

// renderTranscript writes old as a plain transcript of at most about limit
// bytes: each entry cut to its share, and the middle left out when even
// that is too long.
func renderTranscript(old []ModelMessage, limit int) string {
	share := max(limit/max(len(old), 1), minTranscriptEntry)
	entries := make([]string, 0, len(old))
	for _, m := range old {
		var line string
		body := text(m.Content)
		switch m.Role {
		case RoleSummary:
			line = "Summary of what came before: " + cut(body, max(share, limit/3))
		case RoleUser:
			line = "User: " + cut(body, share)
		case RoleAssistant:
			line = "Assistant: " + cut(body, share)
			for _, c := range m.ToolCalls {
				line += "\nAssistant called tool " + c.Name + " with " + cut(c.Arguments, share/2)
			}
		case RoleTool:
			line = "Tool " + m.Name + " returned: " + cut(body, share)
		default:
			line = m.Role + ": " + cut(body, share)
		}
		entries = append(entries, line)
	}
	total := 0
	for _, e := range entries {
		total += len(e) + 2
	}
	if total > limit && len(entries) > 2 {
		// Keep the first and the latest entries; leave out the middle.
		var head, tail []string
		hb, tb := 0, 0
		i, j := 0, len(entries)-1
		for i <= j {
			if hb <= tb && hb+tb+len(entries[i]) <= limit {
				head = append(head, entries[i])
				hb += len(entries[i]) + 2
				i++
			} else if hb+tb+len(entries[j]) <= limit {
				tail = append([]string{entries[j]}, tail...)
				tb += len(entries[j]) + 2
				j--
			} else {
				break
			}
		}
		if i <= j {
			head = append(head, fmt.Sprintf("[… %d messages left out …]", j-i+1))
		}
		entries = append(head, tail...)
	}
	return strings.Join(entries, "\n\n")
}

// chat runs one model call on mem within the window: it prepares (and
// compacts) first, and when the model still refuses for length, learns
// the window from the refusal, compacts harder and retries once.
func (t *turn) chat(mem *[]ModelMessage, specs []ToolSpec, on func(Delta) error) (resp ChatResponse, err error) {
	// A summary call's usage counts with the call it made room for, so a
	// turn's answers still add up to its end.usage (each call was charged
	// to the budget when it ended).
	defer func() {
		resp.Usage = resp.Usage.Add(t.summaryUsage)
		t.summaryUsage = Usage{}
	}()
	if t.agent.A2A != "" {
		done, err := t.r.admit(t.ctx, OwnerOf(t.conv), t.payer(), 0)
		if err != nil {
			return ChatResponse{}, err
		}
		resp, err := t.remote(*mem, on)
		done(resp.Usage)
		return resp, err
	}
	t.r.est.seed(t.conv)
	p, err := t.prepare(mem, specs, false)
	if err != nil {
		return ChatResponse{}, err
	}
	resp, err = t.call(p, specs, on)
	var ce *ContextExceeded
	if err != nil && errors.As(err, &ce) && resp.Text == "" && resp.Reasoning == "" && len(resp.ToolCalls) == 0 {
		t.learn(ce, p)
		t.r.log.Warn("context_exceeded", "conversation_id", t.conv.ID, "window", ce.Window, "prompt", ce.Prompt, "estimated", p.tokens)
		p, err = t.prepare(mem, specs, true)
		if err != nil {
			return ChatResponse{}, err
		}
		resp, err = t.call(p, specs, on)
		if err != nil && errors.As(err, &ce) {
			t.learn(ce, p)
			return resp, exceededError(p.budget.window, max(ce.Prompt, p.tokens), ce.Err)
		}
	}
	if err == nil {
		t.r.est.calibrate(t.conv.ID, p.bytes, resp.Usage.PromptTokens)
		t.context = &ContextSize{Tokens: resp.Usage.PromptTokens, Window: p.budget.window, Bytes: p.bytes}
		if t.context.Tokens == 0 { // not reported: the estimate, no calibration
			t.context.Tokens, t.context.Bytes = p.tokens, 0
		}
	}
	return resp, err
}

// call makes one model call of the turn on p: admitted first (the owner
// stands, its estimate reserved in their budget: standing.go), charged
// when it ends.
func (t *turn) call(p prepared, specs []ToolSpec, on func(Delta) error) (ChatResponse, error) {
	done, err := t.r.admit(t.ctx, OwnerOf(t.conv), t.payer(), p.tokens+reserve(p.budget.window))
	if err != nil {
		return ChatResponse{}, err
	}
	if p.noTools {
		specs = nil
	}
	resp, err := t.r.cfg.Model.Chat(t.ctx, t.request(p.send, specs), on)
	done(resp.Usage)
	return resp, err
}

// request is the turn's model call on mem: the conversation's, shaped by
// the turn's response format and tool choice.
func (t *turn) request(mem []ModelMessage, specs []ToolSpec) ChatRequest {
	req := chatRequest(t.conv, mem, specs)
	req.Messages = t.toolImages(req.Messages)
	req.Messages = withMemory(req.Messages, t.project.Instructions) // after the agent's (project.go)
	req.Messages = withMemory(req.Messages, t.recall)               // memory.go
	req.ResponseFormat, req.ToolChoice = t.format, t.choice
	if k := t.cont; k != nil && k.text != "" {
		// The answer a dead turn was streaming, for the model to go on
		// from (recovery.go); kept reasoning alone is not continued: the
		// model reasons again.
		req.Messages = append(req.Messages, ModelMessage{Role: RoleAssistant, Content: []Content{Text(k.text)}, Reasoning: k.reasoning})
		req.Continue = true
	}
	return req
}

// learn takes what a refusal says: the real window (or, when it names
// none, a window a little below the prompt it refused) and the prompt's
// real size (a calibration).
func (t *turn) learn(ce *ContextExceeded, p prepared) {
	if ce.Prompt > 0 {
		t.r.est.calibrate(t.conv.ID, p.bytes, ce.Prompt)
	}
	w := ce.Window
	if w <= 0 {
		w = min(p.budget.window, p.tokens) * 9 / 10
	}
	if w > 0 && w < p.budget.window {
		t.r.windows.Learn(t.conv.Model, w)
	}
}

// withContext puts the turn's last context size on the record that ends it.
func (t *turn) withContext(recs []*Record) []*Record {
	if t.context == nil {
		return recs
	}
	for _, rec := range recs {
		if rec.Turn == TurnEnd {
			rec.Context = t.context
		}
	}
	return recs
}

// CompactResult is what a manual compaction did.
type CompactResult struct {
	Compacted bool     `json:"compacted"`
	Reason    string   `json:"reason,omitempty"`  // why nothing was done
	Message   *Message `json:"message,omitempty"` // the summary_message
}

// Compact summarizes a conversation's earlier turns now, keeping its last
// turn verbatim, in a temp conversation as in a stored one. A running one
// is busy; one with nothing before its last turn is a no-op result that
// says so.
func (r *Runner) Compact(ctx context.Context, id string) (CompactResult, error) {
	if err := r.access(ctx, id); err != nil {
		return CompactResult{}, err
	}
	st := r.storeOf(id)
	if _, err := st.Conversation(ctx, id); err != nil {
		return CompactResult{}, err
	}
	if !r.ModelConfigured() {
		return CompactResult{}, Errorf(CodeUnavailable, "%s", r.cfg.Unavailable)
	}
	busy := Errorf(CodeBusy, "a turn is running in conversation %s; compact it once the turn has ended", id)
	// A turn writing its end (a client may have seen it) is waited for,
	// as Send does, instead of busy.
	for {
		r.mu.Lock()
		prev := r.turns[id]
		if prev == nil {
			r.mu.Unlock()
			break
		}
		ending := prev.ending
		r.mu.Unlock()
		if !ending {
			return CompactResult{}, busy
		}
		select {
		case <-prev.done:
		case <-ctx.Done():
			return CompactResult{}, ctx.Err()
		}
	}
	c, err := st.Conversation(ctx, id)
	if err != nil {
		return CompactResult{}, err
	}
	// The compaction holds the conversation like a turn: a send meanwhile
	// is busy, an interrupt cancels the summary call.
	t, err := r.claim(ctx, st, c, turnOptions{}, func() error {
		if c.Running {
			return busy
		}
		return nil
	})
	if errors.Is(err, ErrBusy) {
		return CompactResult{}, busy
	}
	if err != nil {
		return CompactResult{}, err
	}
	close(t.started)
	tctx := t.ctx
	// The compaction is the caller's command: it ends with the caller's
	// context (a command timeout, a client gone), not only by interrupt.
	defer context.AfterFunc(ctx, func() { t.cancel(context.Cause(ctx)) })()
	t.items = make(chan emitItem, emitQueue)
	emitDone := make(chan struct{})
	go func() { defer close(emitDone); t.emitLoop() }()
	defer func() {
		t.r.mu.Lock()
		t.ending = true
		t.r.mu.Unlock()
		close(t.items)
		<-emitDone
		r.release(t)
	}()

	mem, _, err := r.memory(ctx, st, id) // its record replaces all of memory
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact: %w", err)
	}
	r.est.seed(c)
	b := r.budget(tctx, c.Model, false)
	keep := lastUser(mem)
	if keep < 0 {
		return CompactResult{Reason: "nothing to compact: the conversation has no messages yet"}, nil
	}
	before := t.measure(mem, 0, b).tokens
	next, m, err := t.summarize(mem, elide(mem, keep, false), keep, keep, b, before, 0)
	if err != nil {
		if t.emitErr != nil {
			return CompactResult{}, fmt.Errorf("compact: %w", t.emitErr)
		}
		return CompactResult{}, err
	}
	if next == nil {
		return CompactResult{Reason: "nothing to compact: everything in the conversation is its last turn, which is always kept verbatim"}, nil
	}
	r.log.Info("context_compacted", "conversation_id", id, "replaces", m.Replaces, "tokens_before", before, "tokens_after", m.TokensAfter, "manual", true)
	return CompactResult{Compacted: true, Message: m}, nil
}
