// Package web holds the browser UI's templ components and the view models
// they take. Components do no I/O: the server loads conversations and
// messages, turns them into these plain structs and renders them. The
// components own the markup: the page also carries them as <template>
// elements (template.templ) that the JS layer clones for live updates, and
// the display rules the JS applies (rules.go).
package web

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/agentik/agentik/internal/agent"
)

// Untitled is what a conversation without a title is called.
const Untitled = "New chat"

// Page is everything one page of the UI shows: the sidebar, and either the
// empty "new chat" view (Chat nil), a conversation, or a not-found notice.
type Page struct {
	Title     string // document title
	Nonce     string // CSP nonce of this response's scripts
	ScriptURL string // content-hashed bundle URLs (assets.URL)
	StyleURL  string
	IconURL   string
	// MathScriptURL and MathStyleURL are the math renderer's bundle, which
	// the JS layer loads the first time a message holds math.
	MathScriptURL string
	MathStyleURL  string
	// MermaidScriptURL is the Mermaid renderer's bundle, which the JS layer
	// runs in a sandboxed frame the first time an answer holds a diagram.
	MermaidScriptURL string

	ModelName       string // "" when no model is configured
	ModelConfigured bool
	// SystemPrompt is the server's system prompt (agent.Runner.SystemPrompt):
	// the chat settings show what an empty system prompt stands for.
	SystemPrompt string
	// ModelNotice is a note on the model for the banner area, shown with
	// or without a model: demo mode, or a problem found with the endpoint
	// at start ("" for none).
	ModelNotice string

	Conversations []ConversationItem
	// ConversationTotal counts every conversation; the sidebar pages in
	// the ones past Conversations as the user scrolls.
	ConversationTotal int
	ToolServers       []agent.ToolServer
	// AdminPanel is the admin panel's view (admin.templ); nil elsewhere.
	AdminPanel *AdminView
	// SignOut offers "Sign out" (POST /logout): the server asks for a
	// credential, so a browser has a session to end.
	SignOut bool
	Chat    *ChatView // nil on the new-chat page
	// Memory is the memory page's view (memory.templ); nil on the chat
	// pages.
	Memory *MemoryView
	// Inbox is the inbox page's view (inbox.templ); nil elsewhere.
	Inbox *InboxView
	// Knowledge is the knowledge page's view (knowledge.templ); nil elsewhere.
	Knowledge *KnowledgeView
	// Attach is the knowledge base a new chat starts with (/?knowledge=),
	// shown in the composer; nil for none.
	Attach *agent.Knowledge
	// InboxCount is how many items wait in the signed-in user's inbox:
	// the navigation's badge (assets/src/inbox.js keeps it live).
	InboxCount int
	NotFound   bool // the conversation in the URL does not exist
	// Budget is the reader's token budget (the line near the composer when
	// little is left); nil without one.
	Budget *BudgetNote
	// Nav names the page in the navigation (AppNav): "chats", "agents",
	// "knowledge", "schedules", "memory", "inbox", "settings", "admin".
	Nav string
	// Admin: the reader is an admin (the navigation offers Admin).
	Admin bool
	// Preferences are the reader's settings: the page's theme, the model a
	// new chat starts on, the language of dates.
	Preferences agent.Preferences
	// Section is a management page's main area (managePage: schedules,
	// projects, agents, settings) in the place of the chat; nil elsewhere.
	Section templ.Component
}

// SetInput marks the rows of the conversations in ids as waiting for an
// answer to a question or a sign-in (agent.InboxItem kinds elicitation
// and sign_in) rather than an approval.
func SetInput(items []ConversationItem, ids map[string]bool) {
	for i := range items {
		items[i].Input = ids[items[i].ID]
	}
}

// ConversationItem is one row of the sidebar.
type ConversationItem struct {
	ID    string
	Agent string // the conversation's agent's slug (the sidebar filters by it)
	Child bool   // a delegated child conversation
	Title string
	Temp  bool
	// APIRequest: the temp conversation of a stateless API request
	// (agent.Conversation.APIRequest), badged "API request".
	APIRequest bool
	Running    bool
	Waiting    bool // a tool call waits for a person's decision
	// Input: what waits is a question (an elicitation) or a sign-in, not
	// an approval: the sidebar says "Needs input" (SetInput).
	Input   bool
	Current bool
	// Updated is when the conversation last changed (RFC 3339), which the
	// sidebar groups by; Pinned and Archived file it.
	Updated  string
	Pinned   bool
	Archived bool
	Project  string // its project's id (project.templ's sidebar section lists it)
}

// ChatView is the open conversation with its history.
type ChatView struct {
	ID         string
	Title      string
	Temp       bool
	APIRequest bool   // a stateless API request's: no composer, its approvals answered here
	Agent      string // the conversation's agent's slug
	Running    bool
	TurnSeq    int64
	LastSeq    int64 // seq of the last message on the page: the resume cursor
	Omitted    int   // earlier messages not on the page
	Messages   []MessageView
	Context    *agent.ContextSize // how full the model's context is; nil before the first call
	// Schedule is the schedule whose run sent a message on the page
	// (agent.ScheduleOf): the header marks a scheduled run's chat.
	Schedule string
	// OwnerLabel names the owner when an admin reads another user's chat
	// (from the admin panel's user view): read-only, no composer.
	OwnerLabel string
	// Viewer names the project the reader is only a viewer of: the page
	// has no composer (project.templ's ViewerNote).
	Viewer string
	// Parent is the conversation whose delegation started this one ("" for
	// none): the header links back to it, at the delegating tool call.
	Parent, ParentCall string
}

// Message view kinds.
const (
	KindUser      = "user"
	KindAssistant = "assistant"
	KindTool      = "tool"
	KindError     = "error"
	KindSummary   = "summary" // a compaction: a divider expandable to its summary
	KindUnknown   = "unknown"
)

// MessageView is one entry of the thread. A tool call and its result are
// one card (Kind tool), keyed by CallID.
type MessageView struct {
	Kind     string
	Type     string // the wire type of the message (of the call, for a card)
	ID       string
	Seq      int64
	ClientID string

	Text        string // user, assistant: the text parts, as markdown source
	Images      []Image
	Resources   []Resource // user: the tool servers' resources it attached; tool: those its result linked or embedded
	Files       []FileRef  // user: the files it attached (agent filepart.go)
	Reasoning   string
	Interrupted bool
	Usage       string // formatted token usage; "" when unknown
	// Agent is the slug of the agent that answered, when not the default
	// (agentik); the UI shows it, by the agent's name once it knows it.
	Agent string
	Model string // the model that wrote the answer; "" when unknown
	// SentBy names the admin who sent a user message into another
	// user's chat, acting as admin (agent/actas.go); "" for the owner's.
	SentBy string
	// Citations are the passages of knowledge the answer used
	// (file_search), shown as numbered chips that open the passage.
	Citations []agent.Citation
	// Rating is the reader's 👍/👎 of an answer ("up", "down", "" for
	// none; agent.Feedback).
	Rating string

	CallID    string
	Name      string
	Arguments string // pretty-printed JSON
	HasResult bool
	ResultID  string
	Result    string // pretty-printed when JSON
	IsError   bool
	ChildID   string // a delegation's child conversation (agent__<slug>)
	// AppView is, in a share link's view, the URL of the MCP App the card
	// shows (the chat finds its apps itself, mcpapps.js).
	AppView string
	// Memory is the change a memory tool's call made (memory.templ); nil
	// for other calls.
	Memory *agent.MemoryChange

	Error string // error: the message
	Code  string

	Siblings *agent.Siblings // user, assistant: its place among its versions (branches); nil when it has none
	// NoRegenerate: an answer before the last of its turn (a tool-using
	// turn has several); the turn's Regenerate is on its last.
	NoRegenerate bool

	Summary  string // summary: the text that replaced Replaces earlier entries
	Replaces int
	// Span is what the summary's divider names: the opening words of the
	// first and last user messages it summarized (Single: they are one).
	// KeptID is the message it kept first: the divider sits before it.
	SpanFirst, SpanLast string
	Single              bool
	KeptID              string
}

// Image is an inline image of a message.
type Image struct {
	Mime string
	Data string // base64
}

// ConversationItems turns conversations into sidebar rows, marking current.
func ConversationItems(cs []agent.Conversation, current string) []ConversationItem {
	items := make([]ConversationItem, 0, len(cs))
	for _, c := range cs {
		items = append(items, ConversationItem{ID: c.ID, Agent: cmp.Or(c.Agent, agent.DefaultAgent), Child: c.Parent != nil, Title: Title(c.Title), Temp: c.Temp, APIRequest: c.APIRequest, Running: c.Running, Waiting: len(c.Waiting) > 0, Current: c.ID == current,
			Updated: c.UpdatedAt.UTC().Format(time.RFC3339Nano), Pinned: c.Pinned, Archived: c.Archived, Project: c.Project})
	}
	return items
}

// Title is a conversation's title for display.
func Title(t string) string {
	if strings.TrimSpace(t) == "" {
		return Untitled
	}
	return t
}

// NewChatView builds the view of a conversation from its history in seq
// order. omitted counts earlier messages the caller did not load.
func NewChatView(c agent.Conversation, msgs []agent.Message, omitted int) *ChatView {
	v := &ChatView{ID: c.ID, Title: Title(c.Title), Temp: c.Temp, APIRequest: c.APIRequest, Agent: cmp.Or(c.Agent, agent.DefaultAgent), Running: c.Running, TurnSeq: c.TurnSeq, Omitted: omitted, Context: c.Context}
	if c.Parent != nil {
		v.Parent, v.ParentCall = c.Parent.ConversationID, c.Parent.CallID
	}
	cards := map[string]int{} // call_id → index in v.Messages
	// A turn's usage (the sum of its model calls) shows once, on its last
	// answer, as the live view shows end.usage.
	var turn []int // indexes of the current turn's assistant messages
	var usage agent.Usage
	endTurn := func() {
		for _, i := range turn[:max(len(turn)-1, 0)] {
			v.Messages[i].NoRegenerate = true // one Regenerate per turn, on its last answer
		}
		if len(turn) > 0 && usage != (agent.Usage{}) {
			for _, i := range turn {
				v.Messages[i].Usage = ""
			}
			v.Messages[turn[len(turn)-1]].Usage = FormatUsage(&usage)
		}
		turn, usage = nil, agent.Usage{}
	}
	for _, m := range msgs {
		v.LastSeq = max(v.LastSeq, m.Seq)
		switch m.Type {
		case agent.MessageUser:
			endTurn()
			if id := agent.ScheduleOf(m.ClientID); id != "" && v.Schedule == "" {
				v.Schedule = id
			}
			text, imgs := splitContent(m.Content)
			v.Messages = append(v.Messages, MessageView{Kind: KindUser, Type: m.Type, ID: m.ID, Seq: m.Seq, ClientID: m.ClientID, Text: text, Images: imgs, Resources: resourcesOf(m.Content), Files: filesOf(m.Content), Siblings: m.Siblings, SentBy: sentByLabel(m)})
		case agent.MessageAssistant:
			text, imgs := splitContent(m.Content)
			v.Messages = append(v.Messages, MessageView{
				Kind: KindAssistant, Type: m.Type, ID: m.ID, Seq: m.Seq, Text: text, Images: imgs,
				Reasoning: m.Reasoning, Interrupted: m.Interrupted, Usage: FormatUsage(m.Usage), Siblings: m.Siblings,
				Agent: answerAgent(m.Agent), Model: m.Model, Citations: m.Citations,
			})
			turn = append(turn, len(v.Messages)-1)
			if m.Usage != nil {
				usage = usage.Add(*m.Usage)
			}
		case agent.MessageToolCall:
			cards[m.CallID] = len(v.Messages)
			v.Messages = append(v.Messages, MessageView{Kind: KindTool, Type: m.Type, ID: m.ID, Seq: m.Seq, CallID: m.CallID, Name: m.Name, Arguments: PrettyJSON(m.Arguments)})
		case agent.MessageToolResult:
			i, ok := cards[m.CallID]
			if !ok {
				i = len(v.Messages)
				v.Messages = append(v.Messages, MessageView{Kind: KindTool, Type: m.Type, ID: m.ID, Seq: m.Seq, CallID: m.CallID, Name: m.Name})
			}
			card := &v.Messages[i]
			card.HasResult, card.ResultID, card.Result, card.IsError = true, m.ID, PrettyJSON(m.Result), m.IsError
			_, card.Images = splitContent(m.Images)
			card.Resources = resourcesOf(m.Resources)
			card.ChildID, card.Memory = m.ChildID, m.Memory
		case agent.MessageError:
			v.Messages = append(v.Messages, MessageView{Kind: KindError, Type: m.Type, ID: m.ID, Seq: m.Seq, Error: m.Error, Code: m.Code})
		case agent.MessageSummary:
			v.Messages = append(v.Messages, MessageView{Kind: KindSummary, Type: m.Type, ID: m.ID, Seq: m.Seq, Summary: m.Summary, Replaces: m.Replaces,
				SpanFirst: m.FirstText, SpanLast: m.LastText, Single: SingleSpan(&m), KeptID: m.KeptID})
		default:
			v.Messages = append(v.Messages, MessageView{Kind: KindUnknown, Type: m.Type, ID: m.ID, Seq: m.Seq})
		}
	}
	endTurn()
	v.Messages = dividersBetweenTurns(v.Messages)
	v.Context = contextAfter(c.Context, msgs)
	return v
}

// SetRatings marks the answers the reader rated: ratings by message id.
func (v *ChatView) SetRatings(ratings map[string]string) {
	for i := range v.Messages {
		if m := &v.Messages[i]; m.Kind == KindAssistant {
			m.Rating = ratings[m.ID]
		}
	}
}

// dividersBetweenTurns moves each summary divider before the message its
// compaction kept first (the start of a turn): a compaction during a turn
// is stored after that turn's question, but it summarized the turns
// before it. assets/src/chat.js places live ones the same way.
func dividersBetweenTurns(ms []MessageView) []MessageView {
	for i := 0; i < len(ms); i++ {
		if ms[i].Kind != KindSummary || ms[i].KeptID == "" {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if ms[j].ID == ms[i].KeptID {
				d := ms[i]
				copy(ms[j+1:i+1], ms[j:i])
				ms[j] = d
				break
			}
		}
	}
	return ms
}

// contextAfter is how full the context is once the last answer is in it:
// the last prompt plus what the model wrote to it, when the history ends
// with that answer (its usage is that model call's own). The live view
// computes the same at a turn's end (assets/src/context.js afterTurn).
func contextAfter(c *agent.ContextSize, msgs []agent.Message) *agent.ContextSize {
	if c == nil || len(msgs) == 0 {
		return c
	}
	last := msgs[len(msgs)-1]
	if last.Type != agent.MessageAssistant || last.Usage == nil {
		return c
	}
	after := *c
	after.Tokens += last.Usage.CompletionTokens
	return &after
}

// answerAgent is the agent an answer shows: none for the default agent.
func answerAgent(slug string) string {
	if slug == agent.DefaultAgent {
		return ""
	}
	return slug
}

func splitContent(cs []agent.Content) (string, []Image) {
	var texts []string
	var imgs []Image
	for _, c := range cs {
		switch c.Type {
		case agent.ContentText:
			texts = append(texts, c.Body)
		case agent.ContentImage:
			if inlineImage(c.Mime) && isBase64(c.Data) {
				imgs = append(imgs, Image{Mime: c.Mime, Data: c.Data})
			}
		}
	}
	return strings.Join(texts, "\n\n"), imgs
}

// isBase64 reports whether s uses only the standard base64 alphabet, so a
// data: URL built from it cannot carry anything else.
func isBase64(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// PrettyJSON indents JSON text, or returns the text unchanged if it is not JSON.
func PrettyJSON(s string) string {
	var v any
	if s == "" || json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

// FormatUsage renders token usage like "1,234 tokens · 1,000 in · 234 out"
// (the same text assets/src/dom.js formats).
func FormatUsage(u *agent.Usage) string {
	if u == nil {
		return ""
	}
	return strings.NewReplacer("{total}", thousands(u.TotalTokens), "{prompt}", thousands(u.PromptTokens),
		"{completion}", thousands(u.CompletionTokens)).Replace(usageFormat)
}

func thousands(n int) string {
	s := strings.TrimPrefix(itoa(n), "-")
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// Boot is the initial state the JS layer reads from the page (a JSON
// script block): which conversation is open and where to resume it.
type Boot struct {
	Conversation    *BootConversation `json:"conversation"`
	ModelConfigured bool              `json:"model_configured"`
	// ModelName is the model the sidebar footer names: the open chat's own,
	// else the server's default ("" without a model).
	ModelName string `json:"model_name"`
	// SystemPrompt is the server's system prompt, which a chat whose agent
	// has no instructions gets when it sets none.
	SystemPrompt string `json:"system_prompt"`
	Rules        Rules  `json:"rules"`
	// Budget is the reader's token budget, which the composer's line
	// follows after each turn; absent without one.
	Budget *BudgetNote `json:"budget,omitempty"`
	// Preferences are the reader's settings: the model a new chat starts
	// on and the language of dates (assets/src/locale.js).
	Preferences agent.Preferences `json:"preferences"`
}

// BootConversation is the resume state of the open conversation.
type BootConversation struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Temp  bool   `json:"temp"`
	// APIRequest: a stateless API request's, deleted when its answer ends.
	APIRequest bool   `json:"api_request,omitempty"`
	Agent      string `json:"agent"` // its agent's slug
	Running    bool   `json:"running"`
	TurnSeq    int64  `json:"turn_seq"`
	LastSeq    int64  `json:"last_seq"`
}

// Boot returns the page's initial state for the JS layer.
func (p Page) Boot() Boot {
	b := Boot{ModelConfigured: p.ModelConfigured, ModelName: p.ModelName, SystemPrompt: p.SystemPrompt, Rules: UIRules(), Budget: p.Budget, Preferences: p.Preferences}
	if c := p.Chat; c != nil {
		b.Conversation = &BootConversation{ID: c.ID, Title: c.Title, Temp: c.Temp, APIRequest: c.APIRequest, Agent: c.Agent, Running: c.Running, TurnSeq: c.TurnSeq, LastSeq: c.LastSeq}
	}
	return b
}

// theme is the <html data-theme> of prefs: "light" or "dark" when the
// reader chose one, else "system" (the browser's prefers-color-scheme).
func theme(prefs agent.Preferences) string {
	if prefs.Theme == agent.ThemeLight || prefs.Theme == agent.ThemeDark {
		return prefs.Theme
	}
	return agent.ThemeSystem
}

// src is the data: URL of an inline image. Mime and Data were checked by
// splitContent (raster type, base64 alphabet), so the URL is safe.
func (i Image) src() templ.SafeURL { return templ.SafeURL("data:" + i.Mime + ";base64," + i.Data) }

// sentByLabel names the admin who sent m acting as admin, "" for none.
func sentByLabel(m agent.Message) string {
	if m.SentBy == "" {
		return ""
	}
	if m.SentByName != "" {
		return m.SentByName
	}
	return m.SentBy
}

// LastModel is the model that wrote the chat's last answer shown, "" for
// none (or one written before answers named their model).
func (c *ChatView) LastModel() string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if m := c.Messages[i]; m.Kind == KindAssistant && m.Model != "" {
			return m.Model
		}
	}
	return ""
}
