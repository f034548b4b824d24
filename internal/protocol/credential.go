package protocol

// WebSocket ops of a user's own tool credentials (docs/PROTOCOL.md,
// Credentials); each mirrors its REST route under /agentik/credentials,
// the route's {server} as the field server.
const (
	OpListCredentials  = "list_credentials"
	OpSetCredential    = "set_credential"
	OpDeleteCredential = "delete_credential"
)

// CredentialRequest is the body of PUT /agentik/credentials/{server}.
type CredentialRequest struct {
	Secret string `json:"secret"`
}
