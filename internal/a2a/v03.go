package a2a

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// A2A 0.3's JSON shapes, for the clients that call the 0.3 method names
// (message/send, tasks/get, …): objects carry a "kind", parts are
// {"kind":"text"|"file"|"data"}, states and roles are lower-case words
// ("input-required", "user"), a send answers the task itself, and a
// stream's status update says whether it is the last ("final"). Requests
// are turned into 1.0's params and answers back into 0.3's, so both
// versions run the same code.

// v03Version is the 0.3 protocol version the cards name.
const v03Version = "0.3"

type v03File struct {
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

type v03Part struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *v03File        `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

type v03Message struct {
	Kind      string         `json:"kind"`
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []v03Part      `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type v03Status struct {
	State     string      `json:"state"`
	Message   *v03Message `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

type v03Artifact struct {
	ArtifactID string    `json:"artifactId"`
	Name       string    `json:"name,omitempty"`
	Parts      []v03Part `json:"parts"`
}

type v03Task struct {
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    v03Status      `json:"status"`
	Artifacts []v03Artifact  `json:"artifacts,omitempty"`
	History   []v03Message   `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type v03StatusUpdate struct {
	Kind      string    `json:"kind"`
	TaskID    string    `json:"taskId"`
	ContextID string    `json:"contextId"`
	Status    v03Status `json:"status"`
	Final     bool      `json:"final"`
}

type v03ArtifactUpdate struct {
	Kind      string      `json:"kind"`
	TaskID    string      `json:"taskId"`
	ContextID string      `json:"contextId"`
	Artifact  v03Artifact `json:"artifact"`
	Append    bool        `json:"append,omitempty"`
	LastChunk bool        `json:"lastChunk,omitempty"`
}

type v03PushAuth struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

type v03PushConfig struct {
	ID             string       `json:"id,omitempty"`
	URL            string       `json:"url"`
	Token          string       `json:"token,omitempty"`
	Authentication *v03PushAuth `json:"authentication,omitempty"`
}

// v03TaskPushConfig is 0.3's TaskPushNotificationConfig.
type v03TaskPushConfig struct {
	TaskID     string        `json:"taskId"`
	PushConfig v03PushConfig `json:"pushNotificationConfig"`
}

// v03SendParams are message/send's and message/stream's params.
type v03SendParams struct {
	Message       *v03Message `json:"message"`
	Configuration *struct {
		Blocking      *bool          `json:"blocking"`
		HistoryLength *int           `json:"historyLength"`
		PushConfig    *v03PushConfig `json:"pushNotificationConfig"`
	} `json:"configuration"`
}

// v03PushParams are the params of the tasks/pushNotificationConfig
// methods: set's TaskPushNotificationConfig, or get's, list's and
// delete's task id (id) and config id.
type v03PushParams struct {
	TaskID     string         `json:"taskId"`
	PushConfig *v03PushConfig `json:"pushNotificationConfig"`
	ID         string         `json:"id"`
	ConfigID   string         `json:"pushNotificationConfigId"`
}

func (q v03PushParams) v1() pushParams {
	if q.PushConfig != nil { // set
		return pushParams{PushConfig: q.PushConfig.v1(), ID: q.PushConfig.ID, TaskID: q.TaskID}
	}
	return pushParams{TaskID: q.ID, ID: q.ConfigID}
}

func (c v03PushConfig) v1() PushConfig {
	out := PushConfig{ID: c.ID, URL: c.URL, Token: c.Token}
	if c.Authentication != nil {
		out.Authentication = &PushAuth{Credentials: c.Authentication.Credentials}
		if len(c.Authentication.Schemes) > 0 {
			out.Authentication.Scheme = c.Authentication.Schemes[0]
		}
	}
	return out
}

func v03PushConfigOf(c PushConfig) v03TaskPushConfig {
	out := v03TaskPushConfig{TaskID: c.TaskID, PushConfig: v03PushConfig{ID: c.ID, URL: c.URL, Token: c.Token}}
	if a := c.Authentication; a != nil {
		out.PushConfig.Authentication = &v03PushAuth{Schemes: []string{a.Scheme}, Credentials: a.Credentials}
	}
	return out
}

// v03PushResult is a push method's result in 0.3's shape: a config, the
// list as a bare array, null for a delete.
func v03PushResult(res any) any {
	switch r := res.(type) {
	case PushConfig:
		return v03PushConfigOf(r)
	case map[string]any:
		cs, _ := r["configs"].([]PushConfig)
		out := make([]v03TaskPushConfig, 0, len(cs))
		for _, c := range cs {
			out = append(out, v03PushConfigOf(c))
		}
		return out
	}
	return json.RawMessage("null")
}

// v1 is the send in 1.0's params.
func (q v03SendParams) v1() (sendParams, error) {
	var p sendParams
	if q.Message != nil {
		m, err := q.Message.v1()
		if err != nil {
			return p, err
		}
		p.Message = &m
	}
	if c := q.Configuration; c != nil {
		p.Configuration = &sendConfig{HistoryLength: c.HistoryLength, ReturnImmediately: c.Blocking != nil && !*c.Blocking}
		if c.PushConfig != nil {
			p.Configuration.PushConfig, _ = json.Marshal(c.PushConfig.v1())
		}
	}
	return p, nil
}

// v1 is the message in 1.0's shape.
func (m v03Message) v1() (Message, error) {
	out := Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Metadata: m.Metadata}
	switch m.Role {
	case "user":
		out.Role = RoleUser
	case "agent":
		out.Role = RoleAgent
	default:
		out.Role = m.Role
	}
	for i, p := range m.Parts {
		q := Part{Metadata: p.Metadata}
		switch {
		case p.Kind == "text" && p.Text != nil:
			q.Text = p.Text
		case p.Kind == "file" && p.File != nil && p.File.Bytes != "":
			b, err := base64.StdEncoding.DecodeString(p.File.Bytes)
			if err != nil {
				return out, rpcErr(codeInvalidParams, "message.parts[%d].file.bytes is not base64: %v", i, err)
			}
			q.Raw, q.MediaType, q.Filename = b, p.File.MimeType, p.File.Name
		case p.Kind == "file" && p.File != nil && p.File.URI != "":
			q.URL, q.MediaType, q.Filename = p.File.URI, p.File.MimeType, p.File.Name
		case p.Kind == "data" && len(p.Data) > 0:
			q.Data = p.Data
			if compat, _ := p.Metadata["data_part_compat"].(bool); compat { // a non-object value, wrapped as {"value": …}
				var w struct {
					Value json.RawMessage `json:"value"`
				}
				if json.Unmarshal(p.Data, &w) == nil && len(w.Value) > 0 {
					q.Data = w.Value
				}
			}
		default:
			return out, rpcErr(codeInvalidParams, `message.parts[%d] is not a 0.3 part: kind "text" with text, "file" with file.bytes or file.uri, or "data" with data`, i)
		}
		out.Parts = append(out.Parts, q)
	}
	return out, nil
}

// v03State spells a 1.0 task state as 0.3 does: TASK_STATE_INPUT_REQUIRED
// is input-required.
func v03State(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s, "TASK_STATE_")), "_", "-")
}

func v03Parts(ps []Part) []v03Part {
	out := make([]v03Part, 0, len(ps))
	for _, p := range ps {
		q := v03Part{Metadata: p.Metadata}
		switch {
		case p.Text != nil:
			q.Kind, q.Text = "text", p.Text
		case len(p.Raw) > 0:
			q.Kind, q.File = "file", &v03File{Bytes: base64.StdEncoding.EncodeToString(p.Raw), MimeType: p.MediaType, Name: p.Filename}
		case p.URL != "":
			q.Kind, q.File = "file", &v03File{URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
		default:
			q.Kind, q.Data = "data", p.Data
		}
		out = append(out, q)
	}
	return out
}

func v03MessageOf(m Message) v03Message {
	role := "agent"
	if m.Role == RoleUser {
		role = "user"
	}
	return v03Message{Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: role, Parts: v03Parts(m.Parts), Metadata: m.Metadata}
}

func v03StatusOf(s TaskStatus) v03Status {
	out := v03Status{State: v03State(s.State), Timestamp: s.Timestamp}
	if s.Message != nil {
		m := v03MessageOf(*s.Message)
		out.Message = &m
	}
	return out
}

func v03ArtifactOf(a Artifact) v03Artifact {
	return v03Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: v03Parts(a.Parts)}
}

func v03TaskOf(t Task) v03Task {
	out := v03Task{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: v03StatusOf(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, v03ArtifactOf(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, v03MessageOf(m))
	}
	return out
}

// v03Event is a stream's event as 0.3 sends it: the object itself, with
// its kind.
func v03Event(ev StreamResponse) any {
	switch {
	case ev.Task != nil:
		return v03TaskOf(*ev.Task)
	case ev.StatusUpdate != nil:
		u := ev.StatusUpdate
		return v03StatusUpdate{Kind: "status-update", TaskID: u.TaskID, ContextID: u.ContextID, Status: v03StatusOf(u.Status), Final: settled(u.Status.State)}
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		return v03ArtifactUpdate{Kind: "artifact-update", TaskID: u.TaskID, ContextID: u.ContextID, Artifact: v03ArtifactOf(u.Artifact), Append: u.Append, LastChunk: u.LastChunk}
	case ev.Message != nil:
		return v03MessageOf(*ev.Message)
	}
	return nil
}
