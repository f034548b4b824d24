package a2a

import "encoding/json"

// The A2A v1.0 objects in their JSON form (the protobuf JSON mapping the
// specification and @a2a-js/sdk 1.x use: camelCase fields, enum names as
// strings, a part's content as one of text, raw, url, data).

// Task states and roles as they are spelled on the wire.
const (
	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateFailed        = "TASK_STATE_FAILED"
	StateCanceled      = "TASK_STATE_CANCELED"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	// StateAuthRequired: a per-user tool server waits for the caller's
	// own credential (a credential inbox item; tool/peruser.go).
	StateAuthRequired = "TASK_STATE_AUTH_REQUIRED"

	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// terminal reports whether a task in state s changes no more.
func terminal(s string) bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled
}

// Part is one piece of a message or artifact.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"` // base64 in JSON
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

func textPart(s string) Part { return Part{Text: &s} }

// Message is one message of a task's history.
type Message struct {
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []Part         `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a task's state with the message that explains it.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task: agentik's answer.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// Task is one turn of a conversation.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StatusUpdate is a streamed change of a task's status.
type StatusUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
}

// ArtifactUpdate is a streamed piece of a task's artifact.
type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is one event of a stream: exactly one field is set.
type StreamResponse struct {
	Task           *Task           `json:"task,omitempty"`
	Message        *Message        `json:"message,omitempty"`
	StatusUpdate   *StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// sendParams are the params of SendMessage and SendStreamingMessage.
type sendParams struct {
	Message       *Message    `json:"message"`
	Configuration *sendConfig `json:"configuration"`
}

// sendConfig is a send's configuration.
type sendConfig struct {
	HistoryLength     *int            `json:"historyLength"`
	ReturnImmediately bool            `json:"returnImmediately"`
	PushConfig        json.RawMessage `json:"taskPushNotificationConfig"`
}

// history is the historyLength the send asks for; nil: all.
func (p sendParams) history() *int {
	if p.Configuration == nil {
		return nil
	}
	return p.Configuration.HistoryLength
}

// taskParams are the params of GetTask, CancelTask and SubscribeToTask.
type taskParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

// listParams are the params of ListTasks.
type listParams struct {
	ContextID        string `json:"contextId"`
	Status           string `json:"status"`
	PageSize         *int   `json:"pageSize"`
	PageToken        string `json:"pageToken"`
	HistoryLength    *int   `json:"historyLength"`
	IncludeArtifacts bool   `json:"includeArtifacts"`
}

// ListTasksResponse is the result of ListTasks.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// The agent card (its JSON form).
type (
	// Card is an agent's card.
	Card struct {
		Name                 string                    `json:"name"`
		Description          string                    `json:"description"`
		SupportedInterfaces  []Interface               `json:"supportedInterfaces"`
		Provider             *Provider                 `json:"provider,omitempty"`
		Version              string                    `json:"version"`
		DocumentationURL     string                    `json:"documentationUrl,omitempty"`
		Capabilities         Capabilities              `json:"capabilities"`
		SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
		SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
		DefaultInputModes    []string                  `json:"defaultInputModes"`
		DefaultOutputModes   []string                  `json:"defaultOutputModes"`
		Skills               []Skill                   `json:"skills"`

		// A2A 0.3's fields, for its clients (a 1.0 client reads
		// supportedInterfaces and ignores them).
		V03Version    string                `json:"protocolVersion,omitempty"`
		V03URL        string                `json:"url,omitempty"`
		V03Transport  string                `json:"preferredTransport,omitempty"`
		V03Interfaces []V03Interface        `json:"additionalInterfaces,omitempty"`
		V03Security   []map[string][]string `json:"security,omitempty"`
	}
	// V03Interface is a 0.3 card's additional interface.
	V03Interface struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	}
	// Interface is a URL with its binding.
	Interface struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	}
	// Provider names who runs the agent.
	Provider struct {
		Organization string `json:"organization"`
		URL          string `json:"url"`
	}
	// Capabilities are the optional features served.
	Capabilities struct {
		Streaming         bool `json:"streaming"`
		PushNotifications bool `json:"pushNotifications"`
		ExtendedAgentCard bool `json:"extendedAgentCard"`
	}
	// SecurityScheme is one way to authenticate, in both shapes at once:
	// A2A 1.0's (the oneof field httpAuthSecurityScheme, which 1.0
	// clients and a2a-go 1.x read) and 0.3's JSON Schema shape (type,
	// scheme, which a2a-go 0.3 requires of every scheme: it refuses a
	// card with a scheme without type). Each reader ignores the other's
	// fields.
	SecurityScheme struct {
		HTTPAuth       *HTTPAuthScheme `json:"httpAuthSecurityScheme,omitempty"`
		V03Type        string          `json:"type,omitempty"`
		V03Scheme      string          `json:"scheme,omitempty"`
		V03Description string          `json:"description,omitempty"`
	}
	// HTTPAuthScheme is HTTP authentication, e.g. Bearer.
	HTTPAuthScheme struct {
		Description string `json:"description,omitempty"`
		Scheme      string `json:"scheme"`
	}
	// SecurityRequirement names the schemes a request must satisfy.
	SecurityRequirement struct {
		Schemes map[string]StringList `json:"schemes"`
	}
	// StringList is a list of scopes.
	StringList struct {
		List []string `json:"list"`
	}
	// Skill is something the agent does well.
	Skill struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Tags        []string `json:"tags"`
		Examples    []string `json:"examples,omitempty"`
	}
)
