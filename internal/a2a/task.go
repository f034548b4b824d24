package a2a

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// A task is one turn of a conversation: its id is the conversation's id
// and the seq of the turn's first event (the user's message), so it is
// derived from stored ids and needs no table of its own.

// answerID is the id of a task's one artifact: the agent's answer.
const answerID = "answer"

// taskID is the id of the turn of conversation convID that starts at seq.
func taskID(convID string, seq int64) string {
	return convID + "-" + strconv.FormatInt(seq, 10)
}

// parseTaskID splits a task id; ok is false for one agentik never made.
func parseTaskID(id string) (convID string, seq int64, ok bool) {
	convID, s, found := strings.Cut(id, "-")
	if !found || convID == "" {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil || seq <= 0 {
		return "", 0, false
	}
	return convID, seq, true
}

// waitingCall is a tool call of the task that waits for a decision.
type waitingCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// credentialWait is a credential item the task waits on.
type credentialWait struct {
	Server string `json:"server"`
	URL    string `json:"url"`
}

// taskView folds a turn's events, in log order, into the task: its state,
// its answer so far, and the updates a stream sends for each event.
type taskView struct {
	id, contextID string
	user          *agent.Message // the turn's first event; nil until seen
	state         string
	at            time.Time // of the last status change
	text          strings.Builder
	reasoning     bool
	toolsRan      bool // since the last answer text: the next starts a paragraph
	chunks        int  // artifact updates sent
	waiting       []waitingCall
	credential    *credentialWait // a per-user tool server waits for the caller's credential
	errMsg        string
	interrupted   bool
}

func newTaskView(convID string, seq int64) *taskView {
	return &taskView{id: taskID(convID, seq), contextID: convID, state: StateSubmitted}
}

// start takes the event at the task's seq; it reports whether it starts
// a task (a user's message).
func (v *taskView) start(ev agent.AllEvent) bool {
	if ev.Event == nil || ev.Event.Type != agent.EventMessage || ev.Event.Message == nil || ev.Event.Message.Type != agent.MessageUser {
		return false
	}
	v.user = ev.Event.Message
	v.state, v.at = StateWorking, ev.Date
	return true
}

// on folds one later event of the conversation and returns what a stream
// sends for it.
func (v *taskView) on(all agent.AllEvent) []StreamResponse {
	ev := all.Event
	if ev == nil || terminal(v.state) {
		return nil
	}
	switch ev.Type {
	case agent.EventStartReasoning:
		v.reasoning = true
	case agent.EventStartResponse:
		v.reasoning = false
	case agent.EventAppendText:
		if v.reasoning || ev.Text == "" {
			return nil
		}
		t := ev.Text
		if v.toolsRan && v.text.Len() > 0 {
			t = "\n\n" + t
		}
		v.toolsRan = false
		v.text.WriteString(t)
		u := &ArtifactUpdate{TaskID: v.id, ContextID: v.contextID, Artifact: Artifact{ArtifactID: answerID, Name: answerID, Parts: []Part{textPart(t)}}, Append: v.chunks > 0}
		v.chunks++
		return []StreamResponse{{ArtifactUpdate: u}}
	case agent.EventToolResult:
		v.toolsRan = true
	case agent.EventApprovalRequest:
		args := json.RawMessage(ev.Arguments)
		if !json.Valid(args) {
			args = nil
		}
		v.waiting = append(v.waiting, waitingCall{CallID: ev.CallID, Name: ev.Name, Arguments: args})
		return v.status(StateInputRequired, all.Date)
	case agent.EventElicitationRequest:
		if ev.Mode == agent.ElicitCredential {
			v.credential = &credentialWait{Server: ev.Server, URL: ev.URL}
			return v.status(StateAuthRequired, all.Date)
		}
	case agent.EventElicitation:
		if v.credential != nil {
			v.credential = nil
			if len(v.waiting) > 0 {
				return v.status(StateInputRequired, all.Date)
			}
			return v.status(StateWorking, all.Date)
		}
	case agent.EventApproval:
		for i, w := range v.waiting {
			if w.CallID == ev.CallID {
				v.waiting = append(v.waiting[:i], v.waiting[i+1:]...)
				break
			}
		}
		if len(v.waiting) == 0 {
			return v.status(StateWorking, all.Date)
		}
	case agent.EventError:
		v.errMsg = agent.FailureText(ev.Code, ev.Error)
	case agent.EventInterrupted:
		v.interrupted = true
	case agent.EventEnd:
		v.waiting = nil
		state := StateCompleted
		switch {
		case v.interrupted:
			state = StateCanceled
		case v.errMsg != "":
			state = StateFailed
		}
		var out []StreamResponse
		if v.chunks > 0 {
			out = append(out, StreamResponse{ArtifactUpdate: &ArtifactUpdate{TaskID: v.id, ContextID: v.contextID,
				Artifact: Artifact{ArtifactID: answerID, Name: answerID, Parts: []Part{textPart("")}}, Append: true, LastChunk: true}})
		}
		return append(out, v.status(state, all.Date)...)
	}
	return nil
}

// status moves the task to state and returns its status update (none when
// the state did not change).
func (v *taskView) status(state string, at time.Time) []StreamResponse {
	if v.state == state {
		return nil
	}
	v.state, v.at = state, at
	return []StreamResponse{{StatusUpdate: &StatusUpdate{TaskID: v.id, ContextID: v.contextID, Status: v.taskStatus()}}}
}

// taskStatus is the status as it stands, with the message that explains
// it: the calls waiting for a decision, or the error.
func (v *taskView) taskStatus() TaskStatus {
	st := TaskStatus{State: v.state}
	if !v.at.IsZero() {
		st.Timestamp = v.at.UTC().Format(time.RFC3339Nano)
	}
	msg := func(parts ...Part) *Message {
		return &Message{MessageID: v.id + "-status-" + strconv.FormatInt(v.at.UnixNano(), 36), ContextID: v.contextID, TaskID: v.id, Role: RoleAgent, Parts: parts}
	}
	switch v.state {
	case StateInputRequired:
		data, _ := json.Marshal(map[string]any{"waiting": v.waiting})
		st.Message = msg(
			textPart(`approve or deny the tool call(s): reply on this task with a data part {"decision":"approve"|"deny","reason"?,"call_id"?} (without call_id it decides every waiting call)`),
			Part{Data: data, MediaType: "application/json"})
	case StateAuthRequired:
		if c := v.credential; c != nil {
			data, _ := json.Marshal(c)
			st.Message = msg(textPart(fmt.Sprintf(`tool server %q runs as you and has no credential of yours it accepts: give it at %s (PUT {"secret": "…"}), and the task goes on`, c.Server, c.URL)),
				Part{Data: data, MediaType: "application/json"})
		}
	case StateFailed:
		st.Message = msg(textPart(v.errMsg))
	}
	return st
}

// task is the task as it stands; history is how many messages of its
// history to include (-1: all).
func (v *taskView) task(history int) Task {
	t := Task{ID: v.id, ContextID: v.contextID, Status: v.taskStatus()}
	if v.text.Len() > 0 {
		t.Artifacts = []Artifact{{ArtifactID: answerID, Name: answerID, Parts: []Part{textPart(v.text.String())}}}
	}
	if v.user != nil && history != 0 {
		t.History = []Message{userMessage(v.user, v.id)}
	}
	return t
}

// userMessage is a stored user message in A2A's shape.
func userMessage(m *agent.Message, taskID string) Message {
	out := Message{MessageID: m.ID, ContextID: m.ConversationID, TaskID: taskID, Role: RoleUser}
	if m.ClientID != "" {
		out.MessageID = m.ClientID // the id the client gave it
	}
	for _, c := range m.Content {
		switch c.Type {
		case agent.ContentText:
			out.Parts = append(out.Parts, textPart(c.Body))
		case agent.ContentImage:
			if b, err := decodeBase64(c.Data); err == nil {
				out.Parts = append(out.Parts, Part{Raw: b, MediaType: c.Mime})
			}
		case agent.ContentFile: // the file it attached, by reference
			out.Parts = append(out.Parts, Part{URL: FileURLPrefix + c.FileID, Filename: c.Name, MediaType: c.Mime})
		}
	}
	if out.Parts == nil {
		out.Parts = []Part{}
	}
	return out
}
