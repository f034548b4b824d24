package agent

import "regexp"

// externalID is what a conversation id chosen by a client may look like:
// the ids the AI SDK's useChat and AG-UI's clients make (nanoid, UUID), and
// agentik's own.
var externalID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// CheckExternalID says what is wrong with a conversation id a client chose,
// or nil.
func CheckExternalID(field, id string) error {
	if !externalID.MatchString(id) {
		return Errorf(CodeBadRequest, "%s must be 1–128 letters, digits, '-' or '_' (a conversation id), got %q", field, Shorten(id, 140))
	}
	return nil
}
